"""End-to-end entity linking with the demo model: texts/s for ~100-word texts on 2 cores.

Texts: sentences about the embedded kb's countries, capitals and cities, rendered
through the kb's relation templates in several languages until a text has 100
words (space-delimited languages) or 250 characters (ja, zh, th). Each method
(prior only, combined, global) runs in a fresh process, interleaved; the linker
(demo model, embedded kb, mention index) is built before the clock starts.

    python benchmarks/link_speed.py [--texts 200] [--model DIR] [--smoke]

``--smoke``: 14 texts (two per language) with the tiny demo model, one round.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from common import bench_threads, benchmark_parser, best_runs, peak_rss_mb, run_interleaved, smoke_demo

LANGS = ("en", "de", "es", "ru", "ar", "ja", "zh")
RELATIONS = ("P17", "P36", "P30", "P37", "P38", "P47")
METHODS = ("prior", "combined", "global")


def make_texts(db, lang: str, n: int, seed: int = 0) -> list[str]:
    """``n`` texts of ~100 words in ``lang`` from the kb's facts (labels through the relation templates)."""
    rng = random.Random(seed)
    facts = [f for pid in RELATIONS for f in db.facts(property=pid)]
    keys = sorted({k for f in facts for k in (f.subject, f.object)})
    labels = db.labels(keys, lang)
    facts = [f for f in facts if f.subject in labels and f.object in labels]
    template = {pid: db.template(pid, lang) for pid in RELATIONS}
    spaced = lang not in ("ja", "zh", "th")
    out = []
    for _ in range(n):
        parts: list[str] = []
        while (len(" ".join(parts).split()) if spaced else len("".join(parts))) < (100 if spaced else 250):
            f = rng.choice(facts)
            parts.append(template[f.property].fill(labels[f.subject], labels[f.object]))
        out.append((" " if spaced else "").join(parts))
    return out


def measure(method: str, model: str | None, n_texts: int) -> dict:
    import torch

    from kb.sources.embedded import default_db
    from mluke.linking.linker import Linker

    torch.set_num_threads(bench_threads())
    db = default_db()
    linker = Linker(model, db, languages=list(LANGS))
    texts = {lang: make_texts(db, lang, n_texts // len(LANGS)) for lang in LANGS}
    linker.link(texts["en"][:2], "en", method=method)  # warm-up: index pages, first forward pass
    mentions = 0
    t = time.perf_counter()
    for lang, batch in texts.items():
        mentions += sum(len(found) for found in linker.link(batch, lang, method=method))
    seconds = time.perf_counter() - t
    n = sum(len(b) for b in texts.values())
    words = sum(len(t.split()) for lang, b in texts.items() if lang not in ("ja", "zh") for t in b)
    return {
        "method": method,
        "texts": n,
        "texts_per_s": n / seconds,
        "mentions_per_s": mentions / seconds,
        "mentions_per_text": mentions / n,
        "words_per_text_spaced": words / sum(len(texts[l]) for l in LANGS if l not in ("ja", "zh")),
        "seconds": seconds,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--texts", type=int, default=210)
    ap.add_argument("--model", default=None, help="model folder (default: the cached demo model)")
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.model, args.texts)))
        return
    if args.smoke:
        args.texts, args.repeats, args.model = 2 * len(LANGS), 1, str(smoke_demo())
    extra = ["--texts", str(args.texts)] + (["--model", args.model] if args.model else [])
    results = run_interleaved(__file__, list(METHODS), extra, args.repeats)
    best = best_runs(results, "texts_per_s")
    first = best[METHODS[0]]
    print(
        f"\n{first['texts']} texts, {first['mentions_per_text']:.1f} mentions per text, "
        f"{first['words_per_text_spaced']:.0f} words per text (space-delimited languages)"
    )
    print("\n| method | texts/s | mentions/s | peak RSS (MB) |\n|---|---:|---:|---:|")
    for m in METHODS:
        b = best[m]
        print(f"| {m} | {b['texts_per_s']:.1f} | {b['mentions_per_s']:.0f} | {b['peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
