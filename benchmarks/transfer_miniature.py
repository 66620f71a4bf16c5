"""The miniature cross-lingual transfer experiment: NER and relation extraction sets made from the embedded
kb in 24 languages (``probes.transfer.miniature``), fine-tuned on English with the demo model and evaluated
zero-shot on every language, with entity features (mLUKE-E) and word features (mLUKE-W), several seeds.

Writes ``benchmarks/results/transfer_miniature.json`` (every score) and prints a table like the mLUKE
paper's Table 3: per language and on average, the mean and spread over seeds, E against W.

    python benchmarks/transfer_miniature.py [--seeds 0 1 2] [--epochs 5] [--learning-rate 1e-3] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(args: argparse.Namespace) -> dict:
    import torch

    import kb
    from kb.files import write_json
    from mluke.demo import demo_model
    from mluke.transfer import FineTuneConfig
    from probes.transfer import evaluate, finetune
    from probes.transfer.miniature import write_miniature

    torch.set_num_threads(args.threads)  # a small model: one thread is as fast, and robust on a shared machine
    work = args.work
    model = args.model or demo_model()
    data = write_miniature(kb.default_db(), work / "data", seed=0) if not (work / "data" / "manifest.json").exists() \
        else work / "data"
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    settings = {k: (_shown(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    results: dict = {"model": str(model), "manifest": manifest, "settings": settings, "runs": []}
    for task in args.tasks:
        tests = sorted((p.parent.name, p) for p in (data / task).glob("*/test.txt"))
        for seed in args.seeds:
            for features in ("entity", "word"):
                out = work / f"{task}-{features}-{seed}"
                config = FineTuneConfig(learning_rate=args.learning_rate, batch_size=args.batch_size,
                                        epochs=args.epochs, seed=seed)
                started = time.perf_counter()
                report = finetune(task, data / task / "en" / "train.txt", data / task / "en" / "dev.txt", output=out,
                                  features=features, model=model, config=config, overwrite=True, progress=False)
                scores = evaluate(task, out, tests, progress=False)
                results["runs"].append({"task": task, "seed": seed, "features": features,
                                        "seconds": round(time.perf_counter() - started, 1),
                                        "history": report.history, "languages": scores.rows,
                                        "average": scores.average})
                key = "f1" if task == "ner" else "macro_f1"
                print(f"{task} {features} seed {seed}: en {100 * scores.rows[[r['lang'] for r in scores.rows].index('en')][key]:.1f}"
                      f", average {100 * scores.average[key]:.1f} ({results['runs'][-1]['seconds']} s)", flush=True)
    write_json(results, args.output, overwrite=True)
    return results


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (the results file is committed)."""
    path = path.resolve()
    return path.relative_to(HERE.parent).as_posix() if path.is_relative_to(HERE.parent) else str(path)


def table(results: dict, task: str) -> str:
    """Markdown: per language, mean (standard deviation) over seeds of F1 x100 for E and W, and E - W."""
    from common import e_vs_w_table

    key = "f1" if task == "ner" else "macro_f1"
    return e_vs_w_table({(r["features"], r["seed"], row["lang"]): 100 * row[key] for r in results["runs"]
                         if r["task"] == task for row in r["languages"]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=HERE / "work" / "transfer")
    ap.add_argument("--output", type=Path, default=HERE / "results" / "transfer_miniature.json")
    ap.add_argument("--model", help="pretrained checkpoint (default: the demo model)")
    ap.add_argument("--tasks", nargs="+", default=["ner", "re"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--table-only", action="store_true", help="print the tables of an earlier run's JSON")
    args = ap.parse_args()
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.table_only else run(args)
    for task in ("ner", "re"):
        if any(r["task"] == task for r in results["runs"]):
            print(f"\n{task}:\n{table(results, task)}")


if __name__ == "__main__":
    main()
