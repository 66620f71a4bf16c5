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

    python benchmarks/mention_detection.py [--surfaces 6000000] [--repeats 2] [--passes 3] [--smoke]

``--smoke``: 2,000 surfaces over 500 entities, 10 texts, one pass, one round, in a temporary folder.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from common import benchmark_parser, peak_rss_mb, run_interleaved, smoke_folder


def export_table(index_path: Path, db_path: Path, out: Path) -> int:
    """Write the index's surfaces (key, link probability, candidates) as JSON lines for the baseline."""
    import kb
    from kb.mentions.db_candidates import default_source
    from kb.mentions.index import MentionIndex

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
        from kb.mentions.candidates import Candidate

        keys: dict[str, str] = {}  # one str object per entity key, as a careful loader would do
        self.table: dict[str, tuple[float, tuple[Candidate, ...]]] = {}
        with table_path.open(encoding="utf-8") as f:
            for line in f:
                key, lp, cands = json.loads(line)
                self.table[key] = (lp, tuple(Candidate(keys.setdefault(k, k), p, c, s) for k, p, c, s in cands))

    def detect(self, text: str) -> list:
        from kb.mentions.index import Mention
        from kb.mentions.surfaces import _word_start_re, fold_aligned, token_spans

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
                out.append(Mention(span[0], span[1], text[span[0] : span[1]], lp, cands))
            i = j + 1
        return out


def measure(kind: str, path: Path, texts_path: Path, passes: int) -> dict:
    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    if kind == "ours":
        from kb.mentions.index import MentionIndex

        index = MentionIndex.load(path)
        index.detect_batch(["warm up"], "en")  # reads the language's automaton and arrays, builds its unit table

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
    stages = _stages(index, texts) if kind == "ours" else {}
    digest = hashlib.sha256(
        json.dumps(
            [[(m.start, m.end, m.link_probability, [tuple(c) for c in m.candidates]) for m in ms] for ms in found]
        ).encode()
    ).hexdigest()
    return {
        "load_s": load_s,
        "texts": len(texts),
        "mentions": n_mentions,
        "best_pass_s": best,
        "texts_per_s": len(texts) / best,
        "mentions_per_s": n_mentions / best,
        "peak_rss_mb": peak_rss_mb(),
        "digest": digest,
        "stages_us_per_text": stages,
    }


def _stages(index, texts: list[str]) -> dict[str, float]:
    """Where one pass of ``MentionIndex.detect`` (one text at a time) spends its time, per text (uses
    internals), and the totals of that path and of ``detect_batch`` (ASCII texts together, with numpy)."""
    from itertools import repeat

    from kb.mentions.compiled import _UNKNOWN
    from kb.mentions.surfaces import fold_aligned, token_bounds

    lang = index._lang("en")
    out = {}
    t = time.perf_counter()
    folded = [fold_aligned(x).folded for x in texts]
    out["fold"] = time.perf_counter() - t
    t = time.perf_counter()
    units = [token_bounds(f)[0] for f in folded]
    out["tokenize"] = time.perf_counter() - t
    t = time.perf_counter()
    codes = ["".join(map(lang.codes.get, u, repeat(_UNKNOWN))) for u in units]
    out["word codes"] = time.perf_counter() - t
    t = time.perf_counter()
    for c in codes:
        lang.automaton.find(c)
    out["automaton"] = time.perf_counter() - t
    t = time.perf_counter()
    for x in texts:
        index.detect(x, "en")
    out["total, one text at a time"] = time.perf_counter() - t
    t = time.perf_counter()
    index.detect_batch(texts, "en")
    out["total, detect_batch"] = time.perf_counter() - t
    return {k: round(v / len(texts) * 1e6, 1) for k, v in out.items()}


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--surfaces", type=int, default=6_000_000)
    ap.add_argument("--entities", type=int, default=1_200_000)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--passes", type=int, default=3, help="passes over the texts per run (best counts)")
    args = ap.parse_args()
    if args.smoke:
        args.work, args.surfaces, args.entities, args.texts, args.passes, args.repeats = (
            smoke_folder(),
            2000,
            500,
            10,
            1,
            1,
        )
    db_path = args.work / f"surfaces_{args.surfaces}.sqlite"
    texts = args.work / f"texts_{args.surfaces}.json"
    index_path = args.work / f"mentions_{args.surfaces}.sqlite"
    table = args.work / f"baseline_table_{args.surfaces}.jsonl"
    if args.measure:
        if args.measure not in ("ours", "baseline"):
            raise SystemExit(f"--measure takes ours or baseline, not {args.measure!r}")
        path = index_path if args.measure == "ours" else table
        print(json.dumps(measure(args.measure, path, texts, args.passes)))
        return

    from surface_generate import generate

    import kb
    from kb.mentions.index import MentionIndex

    args.work.mkdir(parents=True, exist_ok=True)
    if not db_path.exists() or not texts.exists():
        print("generated", json.dumps(generate(db_path, texts, args.surfaces, args.entities, args.texts)))
    if not index_path.exists():
        t = time.perf_counter()
        with kb.EntityDB(db_path) as db:
            index = MentionIndex.build(db, languages=["en"])
        built = time.perf_counter() - t
        index.save(index_path)
        print(
            f"one-time index build: {built:.0f} s, {index.stats()['en']['surfaces']:,} surfaces, "
            f"{index.stats()['en']['units']:,} distinct words, {index_path.stat().st_size / 2**20:.0f} MiB on disk"
        )
    if not table.exists():
        t = time.perf_counter()
        n = export_table(index_path, db_path, table)
        print(f"baseline table exported: {n:,} surfaces in {time.perf_counter() - t:.0f} s")
    results = run_interleaved(
        __file__,
        ["baseline", "ours"],
        ["--work", str(args.work), "--surfaces", str(args.surfaces), "--passes", str(args.passes)],
        args.repeats,
    )
    best = {k: max(v, key=lambda r: r["texts_per_s"]) for k, v in results.items()}
    b, o = best["baseline"], best["ours"]
    if len({r["digest"] for runs in results.values() for r in runs}) != 1:
        raise SystemExit(f"the two detectors disagree: {b['mentions']} vs {o['mentions']} mentions")
    print()
    print(f"{o['texts']:,} texts of 100 words, {o['mentions']:,} mentions (identical for both)")
    print()
    print("| | texts/s | mentions/s | peak RSS (MB) | load (s) |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| n-gram baseline (dict of the table) | {b['texts_per_s']:,.0f} | {b['mentions_per_s']:,.0f} | "
        f"{b['peak_rss_mb']:,.0f} | {b['load_s']:.1f} |"
    )
    print(
        f"| `kb.MentionIndex` | {o['texts_per_s']:,.0f} | {o['mentions_per_s']:,.0f} | {o['peak_rss_mb']:,.0f} | "
        f"{o['load_s']:.2f} |"
    )
    print(
        f"| ratio | {o['texts_per_s'] / b['texts_per_s']:.1f}x | {o['mentions_per_s'] / b['mentions_per_s']:.1f}x | "
        f"{b['peak_rss_mb'] / o['peak_rss_mb']:.1f}x less | |"
    )
    print()
    print("texts/s of every run:", {k: [round(r["texts_per_s"]) for r in v] for k, v in results.items()})
    print("ours, microseconds per text by stage (one extra pass):", o["stages_us_per_text"])


if __name__ == "__main__":
    main()
