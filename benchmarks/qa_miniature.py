"""The miniature cross-lingual QA experiment: passages and questions made from the embedded kb's facts in 24
languages (``probes.transfer.miniature.qa``; passage and question patterns of the test set held out of
training), fine-tuned on English with the demo model, with entity-linked input (mLUKE-E) and without
(mLUKE-W), several seeds; evaluated zero-shot on every language (XQuAD layout) and on MLQA's seven languages
as the full context x question matrix (G-XLT). Names are linked from the embedded kb's names (the
``anchors`` source; the embedded kb has no link counts, so every unambiguous name is kept).

Writes ``benchmarks/results/qa_miniature.json`` and prints per-language F1 (mean and spread over seeds) and the
G-XLT F1 matrices of both kinds.

    python benchmarks/qa_miniature.py [--seeds 0 1 2] [--epochs 5] [--learning-rate 1e-3] [--model DIR]

Knowledge-enhanced word features (issue 32) beside E and W: ``--features entity word knowbert --knowbert-model
RUN/model`` fine-tunes a KnowBert model trained from the same demo model (``benchmarks/knowbert_demo.py``) with
``features="knowbert"`` (its layer reads the embedded kb's mentions of each question and passage window); the
table then gets a KnowBert column and a G-XLT matrix of its own.

``--smoke``: 16 training, 4 dev and 2 test questions per language, one seed, one epoch, the tiny demo model and a
KnowBert model trained from it for one step per stage (all three kinds of features), in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def run(args: argparse.Namespace) -> dict:
    import torch
    from common import finetune_config, log_run

    import kb
    from mluke.demo.model import demo_model
    from probes.transfer.miniature.qa import write_qa_miniature
    from probes.transfer.runs.qa import evaluate_qa, finetune_qa

    torch.set_num_threads(args.threads)
    work = args.work
    model = args.model or demo_model()
    data = work / "data"
    if not (data / "manifest.json").exists():
        sizes = {"train_size": args.train_size, "dev_size": args.dev_size, "test_size": args.test_size}
        write_qa_miniature(kb.default_db(), data, seed=0, overwrite=True, **sizes)
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    results: dict = {
        "model": str(model),
        "manifest": manifest,
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "runs": [],
    }
    every_run = {"model": model, "overwrite": True, "progress": False}
    for seed in args.seeds:
        for features in args.features:
            out = work / f"qa-{features}-{seed}"
            options = {"output": out, "features": features, "config": finetune_config(args, seed), **every_run}
            if features == "knowbert":
                options["model"] = args.knowbert_model
            started = time.perf_counter()
            report = finetune_qa(data / "train.en.json", data / "dev.en.json", **options)
            trained = time.perf_counter() - started
            scores = evaluate_qa(out, xquad=data / "xquad", mlqa=data / "mlqa", split="test", gxlt=True, progress=False)
            results["runs"].append(
                {
                    "seed": seed,
                    "features": features,
                    "train_seconds": round(trained, 1),
                    "seconds": round(time.perf_counter() - started, 1),
                    "history": report.history,
                    "names_per_question": report.names_per_question,
                    **scores.to_dict(),
                }
            )
            xquad = {r["lang"]: r for r in scores.rows if r["dataset"] == "xquad"}
            log_run(results, args.output, f"qa {features} seed {seed}", xquad)
    return results


def table(results: dict) -> str:
    """Markdown: per language, mean (standard deviation) over seeds of XQuAD-layout F1 x100, E against W (and
    KnowBert features with KnowBert - W, when the run has them)."""
    from common import e_vs_w_table
    from transfer_miniature import knowbert_table

    score = {
        (r["features"], r["seed"], row["lang"]): 100 * row["f1"]
        for r in results["runs"]
        for row in r["languages"]
        if row["dataset"] == "xquad"
    }
    return knowbert_table(score) if any(k[0] == "knowbert" for k in score) else e_vs_w_table(score, " F1")


def gxlt(results: dict, features: str) -> str:
    """Markdown: the G-XLT F1 matrix (x100) averaged over seeds; rows = context, columns = question language."""
    runs = [r for r in results["runs"] if r["features"] == features]
    langs = runs[0]["gxlt"]["langs"]
    lines = ["| context \\ question | " + " | ".join(langs) + " |", "|---|" + "---:|" * len(langs)]
    for c in langs:
        cells = [statistics.mean(100 * r["gxlt"]["f1"][f"{c}/{q}"] for r in runs) for q in langs]
        lines.append(f"| {c} | " + " | ".join(f"{v:.1f}" for v in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    from common import miniature_parser, smoke_miniature

    ap = miniature_parser(__doc__, "qa", train_size=1000)
    ap.add_argument("--dev-size", type=int, default=200)
    ap.add_argument("--test-size", type=int, default=300, help="test questions per language")
    ap.add_argument("--features", nargs="+", default=["entity", "word"], choices=["entity", "word", "knowbert"])
    ap.add_argument("--knowbert-model", type=Path, help="a KnowBert model folder, for --features knowbert")
    args = ap.parse_args()
    smoke_miniature(args, train_size=16, dev_size=4, test_size=2)
    if "knowbert" in args.features and args.knowbert_model is None and not args.table_only:
        ap.error("--features knowbert needs --knowbert-model")
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.table_only else run(args)
    print("\n" + table(results))
    for features in dict.fromkeys(r["features"] for r in results["runs"]):
        print(f"\nG-XLT F1, {features}:\n{gxlt(results, features)}")


if __name__ == "__main__":
    main()
