"""Mention detection + candidates at real scale: ``kb.MentionIndex`` vs a naive n-gram baseline.

Data: ``benchmarks/surface_generate.py`` writes an entity database with 6M anchor
surface forms over 1.2M entities (generated here on first use) and 2,000 texts
of 100 words. The index is built from it once (timed; link probability >= 1%).
The baseline holds *the same table* (every surface of the index with its link
probability and candidate list) in a Python dict and looks up every n-gram of up
to 10 tokens one by one, longest first from the leftmost token, with the same
tokenizer and offsets, so both produce identical mentions (checked).

Each measurement runs in a fresh interpreter (peak RSS = ``VmHWM``), ours and the
baseline interleaved, best of the runs.

    python benchmarks/mention_detection.py [--surfaces 6000000] [--repeats 2] [--passes 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def export_table(index_path: Path, db_path: Path, out: Path) -> int:
    """Write the index's surfaces (key, link probability, candidates) as JSON lines for the baseline."""
    import kb
    from kb.candidates import default_source
    from kb.mentions import MentionIndex

    index = MentionIndex.load(index_path)
    threshold = index.min_link_probability
    n = 0
    with out.open("w", encoding="utf-8") as f, kb.EntityDB(db_path) as db:
        for e in default_source(db).entries("en"):
            if e.candidates and e.link_probability is not None and e.link_probability >= threshold:
                f.write(json.dumps([e.key, e.link_probability, [list(c) for c in e.candidates]], ensure_ascii=False))
                f.write("\n")
                n += 1
    assert n == index.stats()["en"]["surfaces"], (n, index.stats())
    return n


class NGramBaseline:
    """All n-grams of up to 10 tokens, each looked up in a dict of the whole table."""

    MAX_TOKENS = 10

    def __init__(self, table_path: Path) -> None:
        from kb.candidates import Candidate

        keys: dict[str, str] = {}  # one str object per entity key, as a careful loader would do
        self.table: dict[str, tuple[float, tuple[Candidate, ...]]] = {}
        with table_path.open(encoding="utf-8") as f:
            for line in f:
                key, lp, cands = json.loads(line)
                self.table[key] = (lp, tuple(Candidate(keys.setdefault(k, k), p, c, s) for k, p, c, s in cands))

    def detect(self, text: str) -> list:
        from kb.mentions import Mention
        from kb.surfaces import _word_start_re, fold_aligned, token_spans

        folded = fold_aligned(text)
        tokens, starts, ends = token_spans(folded.folded)
        is_word = _word_start_re().match
        word = [is_word(t) is not None for t in tokens]
        table = self.table
        out = []
        n = len(tokens)
        i = 0
        while i < n:
            best = None
            key = ""
            for j in range(i, min(n, i + self.MAX_TOKENS)):
                key = tokens[j] if j == i else key + (" " if word[j - 1] and word[j] else "") + tokens[j]
                hit = table.get(key)
                if hit is not None:
                    best = (j, hit)
            if best is None:
                i += 1
                continue
            j, (lp, cands) = best
            span = folded.original_span(starts[i], ends[j])
            if span is not None:
                out.append(Mention(span[0], span[1], text[span[0]:span[1]], lp, cands))
            i = j + 1
        return out


def measure(kind: str, path: Path, texts_path: Path, passes: int) -> dict:
    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    if kind == "ours":
        from kb.mentions import MentionIndex

        index = MentionIndex.load(path)
        index.detect("", "en")  # reads the language's automaton and arrays

        def run() -> list:
            return index.detect_batch(texts, "en")
    else:
        baseline = NGramBaseline(path)

        def run() -> list:
            return [baseline.detect(t) for t in texts]
    load_s = time.perf_counter() - t0
    best = float("inf")
    for _ in range(passes):
        t = time.perf_counter()
        found = run()
        best = min(best, time.perf_counter() - t)
    n_mentions = sum(map(len, found))
    digest = hashlib.sha256(json.dumps(
        [[(m.start, m.end, m.link_probability, [tuple(c) for c in m.candidates]) for m in ms] for ms in found]
    ).encode()).hexdigest()
    return {"load_s": load_s, "texts": len(texts), "mentions": n_mentions, "best_pass_s": best,
            "texts_per_s": len(texts) / best, "mentions_per_s": n_mentions / best, "peak_rss_mb": _peak_rss_mb(),
            "digest": digest}


def run_child(kind: str, path: Path, texts: Path, passes: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--measure", kind, "--path", str(path), "--texts-file", str(texts),
                           "--passes", str(passes)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--surfaces", type=int, default=6_000_000)
    ap.add_argument("--entities", type=int, default=1_200_000)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--passes", type=int, default=3, help="passes over the texts per run (best counts)")
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work")
    ap.add_argument("--measure", choices=["ours", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--texts-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.path, args.texts_file, args.passes)))
        return

    import kb
    from kb.mentions import MentionIndex
    from surface_generate import generate

    args.work.mkdir(parents=True, exist_ok=True)
    db_path = args.work / f"surfaces_{args.surfaces}.sqlite"
    texts = args.work / f"texts_{args.surfaces}.json"
    index_path = args.work / f"mentions_{args.surfaces}.sqlite"
    table = args.work / f"baseline_table_{args.surfaces}.jsonl"
    if not db_path.exists() or not texts.exists():
        print("generated", json.dumps(generate(db_path, texts, args.surfaces, args.entities, args.texts)))
    if not index_path.exists():
        t = time.perf_counter()
        with kb.EntityDB(db_path) as db:
            index = MentionIndex.build(db, languages=["en"])
        built = time.perf_counter() - t
        index.save(index_path)
        print(f"one-time index build: {built:.0f} s, {index.stats()['en']['surfaces']:,} surfaces, "
              f"{index.stats()['en']['units']:,} distinct words, {index_path.stat().st_size / 2**20:.0f} MiB on disk")
    if not table.exists():
        t = time.perf_counter()
        n = export_table(index_path, db_path, table)
        print(f"baseline table exported: {n:,} surfaces in {time.perf_counter() - t:.0f} s")
    results: dict[str, list[dict]] = {"baseline": [], "ours": []}
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        results["baseline"].append(run_child("baseline", table, texts, args.passes))
        results["ours"].append(run_child("ours", index_path, texts, args.passes))
    best = {k: max(v, key=lambda r: r["texts_per_s"]) for k, v in results.items()}
    b, o = best["baseline"], best["ours"]
    if b["digest"] != o["digest"] or b["mentions"] != o["mentions"]:
        raise SystemExit(f"the two detectors disagree: {b['mentions']} vs {o['mentions']} mentions")
    print(json.dumps(results, indent=1))
    print()
    print(f"{o['texts']:,} texts of 100 words, {o['mentions']:,} mentions (identical for both)")
    print()
    print("| | texts/s | mentions/s | peak RSS (MB) | load (s) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| n-gram baseline (dict of the table) | {b['texts_per_s']:,.0f} | {b['mentions_per_s']:,.0f} | "
          f"{b['peak_rss_mb']:,.0f} | {b['load_s']:.1f} |")
    print(f"| `kb.MentionIndex` | {o['texts_per_s']:,.0f} | {o['mentions_per_s']:,.0f} | {o['peak_rss_mb']:,.0f} | "
          f"{o['load_s']:.2f} |")
    print(f"| ratio | {o['texts_per_s'] / b['texts_per_s']:.1f}x | {o['mentions_per_s'] / b['mentions_per_s']:.1f}x | "
          f"{b['peak_rss_mb'] / o['peak_rss_mb']:.1f}x less | |")


if __name__ == "__main__":
    main()
