"""The miniature cross-lingual entity-typing experiment: the typing sets made from the embedded kb in 24
languages (``probes.transfer.miniature.typing``), fine-tuned on English with the demo model and evaluated zero-shot
on the other 23, with entity features (mLUKE-E: an entity [MASK] over the mention) and word features (mLUKE-W:
the mention's first and last pieces), several seeds.

Writes ``benchmarks/results/typing_miniature.json`` (every score) and prints the loose micro F1 per language (mean
and spread over seeds, E against W) and the F1 of each label on the 23 zero-shot languages pooled.

    python benchmarks/typing_miniature.py [--seeds 0 1 2] [--epochs 5] [--train-size 2000] [--model DIR] [--smoke]

``--smoke``: 16 training, 4 dev and 2 test mentions per language, one seed, one epoch, the tiny demo model, in a
temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def run(args: argparse.Namespace) -> dict:
    import torch
    from common import finetune_config, run_entry

    import kb
    from kb.files import write_json
    from mluke.demo.model import demo_model
    from probes.transfer import evaluate, finetune
    from probes.transfer.miniature.typing import write_typing_miniature

    torch.set_num_threads(args.threads)  # a small model: one thread is as fast, and robust on a shared machine
    work = args.work
    model = args.model or demo_model()
    data = work / "data"
    if not (data / "manifest.json").exists():
        sizes = {"train_size": args.train_size, "dev_size": args.dev_size, "test_size": args.test_size}
        write_typing_miniature(kb.default_db(), data, seed=0, **sizes)
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    results: dict = {"model": str(model), "manifest": manifest, "settings": settings, "runs": []}
    tests = sorted((p.parent.name, p) for p in data.glob("*/test.json"))
    for seed in args.seeds:
        for features in ("entity", "word"):
            out = work / f"typing-{features}-{seed}"
            started = time.perf_counter()
            report = finetune(
                "typing",
                data / "en" / "train.json",
                data / "en" / "dev.json",
                output=out,
                features=features,
                model=model,
                config=finetune_config(args, seed),
                all_labels=True,  # the finer labels (city, capital, ...) are not among the nine general types
                overwrite=True,
                progress=False,
            )
            scores = evaluate("typing", out, tests, progress=False)
            results["runs"].append(run_entry(report, scores, started, seed=seed, features=features))
            english = scores.rows[[r["lang"] for r in scores.rows].index("en")]
            zero_shot = statistics.mean(r["f1"] for r in scores.rows if r["lang"] != "en")
            print(
                f"typing {features} seed {seed}: en {100 * english['f1']:.1f}, 23 zero-shot {100 * zero_shot:.1f}"
                f" ({results['runs'][-1]['seconds']} s)",
                flush=True,
            )
    results["constant_baseline"] = constant_baseline(data)
    write_json(results, args.output, overwrite=True)
    return results


def constant_baseline(data: Path) -> dict:
    """The floor: one label set predicted for every mention, the set (a class's labels, or ``location`` alone)
    with the best loose micro F1 on the English training file; its F1 on every test file."""
    from probes.transfer.metrics.typing import typing_scores
    from probes.transfer.miniature.typing import CLASS_LABELS
    from probes.transfer.readers.typing import read_typing

    train = read_typing(data / "en" / "train.json", all_labels=True).examples
    candidates = [*CLASS_LABELS.values(), ("location",)]
    best = max(candidates, key=lambda c: typing_scores([e.labels for e in train], [c] * len(train))["f1"])
    f1 = {}
    for path in sorted(data.glob("*/test.json")):
        test = read_typing(path, all_labels=True).examples
        f1[path.parent.name] = typing_scores([e.labels for e in test], [best] * len(test))["f1"]
    return {"labels": list(best), "f1": f1}


def table(results: dict) -> str:
    """Markdown: per language, mean (standard deviation) over seeds of loose micro F1 x100, E and W, E - W."""
    from common import e_vs_w_table

    return e_vs_w_table(
        {(r["features"], r["seed"], row["lang"]): 100 * row["f1"] for r in results["runs"] for row in r["languages"]}
    )


def label_table(results: dict) -> str:
    """Markdown: per label, F1 x100 averaged over the 23 zero-shot languages, mean (spread) over seeds, E and W."""
    labels = results["manifest"]["labels"]
    lines = ["| label | test mentions (23 languages) | mLUKE-E F1 | mLUKE-W F1 |", "|---|---:|---:|---:|"]
    for label in labels:
        cells, support = [], 0
        for features in ("entity", "word"):
            values = []
            for r in (r for r in results["runs"] if r["features"] == features):
                rows = [row["per_type"].get(label) for row in r["languages"] if row["lang"] != "en"]
                values.append(100 * statistics.mean(t["f1"] if t else 0.0 for t in rows))
                support = sum(t["support"] for t in rows if t)
            cells.append(f"{statistics.mean(values):.1f} ({statistics.pstdev(values):.1f})")
        lines.append(f"| {label} | {support} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    from common import miniature_parser, smoke_miniature

    ap = miniature_parser(__doc__, "typing", train_size=2000, threads=1)
    ap.add_argument("--dev-size", type=int, default=300)
    ap.add_argument("--test-size", type=int, default=300, help="test mentions per language")
    args = ap.parse_args()
    smoke_miniature(args, train_size=16, dev_size=4, test_size=2)
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.table_only else run(args)
    if "constant_baseline" not in results:
        results["constant_baseline"] = constant_baseline(args.work / "data")
    floor = results["constant_baseline"]
    zero_shot = statistics.mean(f for lang, f in floor["f1"].items() if lang != "en")
    print(
        f"constant prediction {floor['labels']}: F1 en {100 * floor['f1']['en']:.1f}, "
        f"23 zero-shot {100 * zero_shot:.1f}"
    )
    print(f"\ntyping, loose micro F1:\n{table(results)}\n\nper label, 23 zero-shot languages:\n{label_table(results)}")


if __name__ == "__main__":
    main()
