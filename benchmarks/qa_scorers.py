"""How much the QA scorer changes the figures: one QA model of the miniature experiment
(``benchmarks/qa_miniature.py``: the demo model fine-tuned on 1,000 English questions, entity features,
seed 0) evaluated zero-shot with each answer normalisation of :mod:`probes.transfer.qa_metrics`:

- XQuAD layout, MLQA's seven languages: ``squad`` (SQuAD v1.1 rules, XQuAD's official scorer) against
  ``mlqa`` (MLQA's rules in the context language);
- MLQA layout, the 7 x 7 G-XLT pairs: ``mlqa`` (official) against ``mlqa-fixed`` (MLQA's Arabic rule
  fixed; only Arabic contexts can differ).

The model and its predictions are the same in every column; only the scorer changes. Writes
``benchmarks/results/qa_scorers.json`` and prints the tables.

    python benchmarks/qa_scorers.py [--seed 0] [--features entity]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MLQA_LANGS = ["en", "es", "de", "ar", "hi", "vi", "zh"]


def run(args: argparse.Namespace) -> dict:
    import torch

    import kb
    from kb.files import write_json
    from mluke.demo import demo_model
    from mluke.transfer import FineTuneConfig
    from probes.transfer.qa_miniature import write_qa_miniature
    from probes.transfer.qa_run import evaluate_qa, finetune_qa

    torch.set_num_threads(args.threads)
    data = args.work / "data"
    if not (data / "manifest.json").exists():
        write_qa_miniature(kb.default_db(), data, seed=0, train_size=1000, overwrite=True)
    out = args.work / f"qa-{args.features}-{args.seed}"
    if not out.is_dir():
        finetune_qa(data / "train.en.json", data / "dev.en.json", output=out, features=args.features,
                    model=demo_model(), config=FineTuneConfig(learning_rate=1e-3, batch_size=16, epochs=5,
                                                              seed=args.seed), overwrite=True, progress=False)
    results: dict = {"features": args.features, "seed": args.seed, "xquad": {}, "mlqa": {}}
    started = time.perf_counter()
    for scorer in ("squad", "mlqa"):
        report = evaluate_qa(out, xquad=data / "xquad", langs=MLQA_LANGS, scorer=scorer, progress=False)
        results["xquad"][scorer] = {r["lang"]: {"exact_match": r["exact_match"], "f1": r["f1"]} for r in report.rows}
    for scorer in ("mlqa", "mlqa-fixed"):
        report = evaluate_qa(out, mlqa=data / "mlqa", split="test", langs=MLQA_LANGS, gxlt=True, scorer=scorer,
                             progress=False)
        results["mlqa"][scorer] = report.gxlt
    results["seconds"] = round(time.perf_counter() - started, 1)
    write_json(results, args.output, overwrite=True)
    return results


def tables(results: dict) -> str:
    x = results["xquad"]
    lines = ["XQuAD layout (x100): EM and F1 under SQuAD v1.1 rules (official) and MLQA rules",
             "| lang | EM squad | EM mlqa | F1 squad | F1 mlqa |", "|---|---:|---:|---:|---:|"]
    for lang in MLQA_LANGS:
        s, m = x["squad"][lang], x["mlqa"][lang]
        lines.append(f"| {lang} | {100 * s['exact_match']:.1f} | {100 * m['exact_match']:.1f} | "
                     f"{100 * s['f1']:.1f} | {100 * m['f1']:.1f} |")
    g = results["mlqa"]
    lines += ["", "G-XLT F1 (x100) with Arabic contexts, MLQA's official rule against the fixed one",
              "| question lang | mlqa | mlqa-fixed |", "|---|---:|---:|"]
    for q in MLQA_LANGS:
        lines.append(f"| {q} | {100 * g['mlqa'][f'ar/{q}']:.1f} | {100 * g['mlqa-fixed'][f'ar/{q}']:.1f} |")
    same = [k for k in g["mlqa"] if not k.startswith("ar/") and g["mlqa"][k] != g["mlqa-fixed"][k]]
    lines.append(f"\nnon-Arabic contexts whose F1 differs between mlqa and mlqa-fixed: {len(same)}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=HERE / "work" / "qa")
    ap.add_argument("--output", type=Path, default=HERE / "results" / "qa_scorers.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--features", default="entity", choices=["entity", "word"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--table-only", action="store_true", help="print the tables of an earlier run's JSON")
    args = ap.parse_args()
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.table_only else run(args)
    print(tables(results))


if __name__ == "__main__":
    main()
