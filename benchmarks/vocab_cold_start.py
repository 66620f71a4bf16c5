"""Entity vocabulary cold start: json.load of an mluke-base sized entity_vocab.json
(what transformers does) vs opening our SQLite vocabulary, each followed by
10,000 random look-ups; plus look-up throughput (single and batched).

Each measurement runs in a fresh interpreter so that time and peak RSS are its own.

    python benchmarks/vocab_cold_start.py [--entities 1200000] [--names 7] [--work benchmarks/work] [--smoke]

``--smoke``: 2,000 entities and 100 look-ups in a temporary folder, one round.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from common import add_smoke, peak_rss_mb, smoke_folder

SYLLABLES = {
    "latin": ["ka", "to", "ri", "men", "sur", "ban", "lo", "vi", "del", "mar", "san", "ber", "gen", "tal", "or", "us"],
    "ja": list("東京大阪都市山川田中島本日国語県町村"),
    "zh": list("北京上海市省山河中国人民大学天"),
    "ar": list("ابتثجحخدذرزسشصضطظعغفقكلمنهوي"),
    "ru": list("абвгдежзиклмнопрстуфхцчшщыэюя"),
    "ko": list("가나다라마바사아자차카타파하서울부산"),
    "th": list("กขคงจฉชซญดตถทนบปผพฟมยรลวสหอ"),
    "hi": ["क", "ख", "ग", "त", "न", "म", "र", "ल", "स", "ह", "दि", "ली"],
    "el": list("αβγδεζηθικλμνξοπρστυφχψω"),
    "bn": list("কখগঘচছজঝটঠডঢতথদধনপফবভমযরলশসহ"),
    "te": list("కఖగఘచఛజఝటఠడఢతథదధనపఫబభమయరలవశసహ"),
}


def _word(rng: random.Random, lang: str) -> str:
    pieces = SYLLABLES.get(lang, SYLLABLES["latin"])
    w = "".join(rng.choice(pieces) for _ in range(rng.randint(2, 4)))
    return w.capitalize() if pieces is SYLLABLES["latin"] else w


def generate(path: Path, n_entities: int, avg_names: int, seed: int = 0) -> tuple[int, list[str]]:
    """Write an HF-layout entity_vocab.json; return the key count and a sample of keys."""
    from kb import MLUKE_LANGUAGES as LANGS  # here, so that the measured processes do not import kb

    rng = random.Random(seed)
    sample: list[str] = []
    n_keys = 0
    with path.open("w", encoding="utf-8") as f:
        f.write("{")
        first = True
        for i, special in enumerate(["[PAD]", "[UNK]", "[MASK]", "[MASK2]"]):
            f.write(("" if first else ", ") + json.dumps(special) + f": {i}")
            first = False
        for eid in range(4, n_entities + 4):
            k = max(1, min(len(LANGS), round(rng.gauss(avg_names, 3))))
            base = " ".join(_word(rng, "en") for _ in range(rng.randint(1, 3)))
            for lang in rng.sample(LANGS, k):
                title = (
                    base
                    if lang in ("en", "de", "fr", "es", "it", "nl", "sv", "pt", "id", "tr", "vi", "pl", "fi", "sw")
                    else " ".join(_word(rng, lang) for _ in range(rng.randint(1, 2)))
                )
                key = f"{lang}:{title} {eid}"  # unique like real titles
                f.write(", " + json.dumps(key, ensure_ascii=False) + f": {eid}")
                n_keys += 1
                if rng.random() < 0.002:
                    sample.append(key)
        f.write("}\n")
    return n_keys, sample


def measure(kind: str, vocab: Path, keys_file: Path) -> dict:
    keys = json.loads(keys_file.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    if kind == "json":
        with vocab.open(encoding="utf-8") as f:
            data = json.load(f)
        t_open = time.perf_counter() - t0
        ids = [data.get(k) for k in keys]
    else:
        from kb import EntityVocab

        v = EntityVocab(vocab)
        t_open = time.perf_counter() - t0
        ids = [v.get_id(*k.split(":", 1)) for k in keys]
    total = time.perf_counter() - t0
    found = sum(i is not None for i in ids)
    out = {
        "open_s": t_open,
        "open_plus_lookups_s": total,
        "found": found,
        "lookups": len(keys),
        "peak_rss_mb": peak_rss_mb(),
    }
    if kind == "ours":
        pairs = [tuple(k.split(":", 1)) for k in keys]
        t = time.perf_counter()
        for _ in range(3):
            for p in pairs:
                v.get_id(*p)
        out["single_lookups_per_s"] = 3 * len(pairs) / (time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(3):
            for start in range(0, len(pairs), 1000):
                v.get_ids(pairs[start : start + 1000])
        out["batched_lookups_per_s"] = 3 * len(pairs) / (time.perf_counter() - t)
    else:
        t = time.perf_counter()
        for _ in range(30):
            for k in keys:
                data.get(k)
        out["single_lookups_per_s"] = 30 * len(keys) / (time.perf_counter() - t)
    return out


def run_child(kind: str, vocab: Path, keys_file: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--measure", kind, "--vocab", str(vocab), "--keys", str(keys_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=1_200_000)
    ap.add_argument("--names", type=int, default=7, help="average names (languages) per entity")
    ap.add_argument("--lookups", type=int, default=10_000)
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--measure", choices=["json", "ours"], help=argparse.SUPPRESS)
    ap.add_argument("--vocab", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--keys", type=Path, help=argparse.SUPPRESS)
    add_smoke(ap)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.vocab, args.keys)))
        return
    if args.smoke:
        args.work, args.entities, args.lookups, args.repeats = smoke_folder(), 2000, 100, 1

    from kb import EntityVocab

    args.work.mkdir(parents=True, exist_ok=True)
    hf = args.work / f"entity_vocab_{args.entities}.json"
    ours = args.work / f"entity_vocab_{args.entities}.sqlite"
    keys_file = args.work / f"lookup_keys_{args.entities}.json"
    if not hf.exists() or not keys_file.exists():
        t = time.perf_counter()
        n_keys, sample = generate(hf, args.entities, args.names)
        rng = random.Random(1)
        keys = [rng.choice(sample) for _ in range(args.lookups - args.lookups // 10)]
        keys += [f"en:Missing title {i}" for i in range(args.lookups // 10)]  # 10% misses
        rng.shuffle(keys)
        keys_file.write_text(json.dumps(keys, ensure_ascii=False), encoding="utf-8")
        print(
            f"generated {hf} ({n_keys:,} keys, {hf.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f} s"
        )
    if not ours.exists():
        t = time.perf_counter()
        EntityVocab.import_hf(hf, ours)
        print(f"one-time import into {ours} ({ours.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f} s")
    results = {"json": [], "ours": []}
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        for kind in ("json", "ours"):
            results[kind].append(run_child(kind, hf, keys_file) if kind == "json" else run_child(kind, ours, keys_file))
    best = {k: min(v, key=lambda r: r["open_plus_lookups_s"]) for k, v in results.items()}
    j, o = best["json"], best["ours"]
    assert j["found"] == o["found"], (j["found"], o["found"])
    print(json.dumps(results, indent=1))
    print()
    print("| | open + 10k look-ups (s) | peak RSS (MB) | single look-ups/s | batched look-ups/s |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| `json.load` + dict | {j['open_plus_lookups_s']:.2f} | {j['peak_rss_mb']:.0f} "
        f"| {j['single_lookups_per_s']:,.0f} | - |"
    )
    print(
        f"| `kb.EntityVocab` (SQLite) | {o['open_plus_lookups_s']:.3f} | {o['peak_rss_mb']:.0f} "
        f"| {o['single_lookups_per_s']:,.0f} | {o['batched_lookups_per_s']:,.0f} |"
    )
    print(
        f"| ratio | {j['open_plus_lookups_s'] / o['open_plus_lookups_s']:.0f}x faster "
        f"| {j['peak_rss_mb'] / o['peak_rss_mb']:.0f}x less | | |"
    )


if __name__ == "__main__":
    main()
