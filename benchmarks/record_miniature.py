"""The miniature cross-lingual ReCoRD experiment: passages of kb facts with every name marked and queries restating
one fact with its object at ``@placeholder`` (``probes.transfer.miniature.record``), fine-tuned on English with the
demo model, with entity features (an entity [MASK] at the placeholder and over every passage name: mLUKE-E) and
word features (the same pieces' first and last vectors: mLUKE-W), several seeds; evaluated zero-shot on the same
facts in every language, EM and F1 by ReCoRD's official rules.

Writes ``benchmarks/results/record_miniature.json`` and prints per-language EM and F1 (mean and spread over seeds).

    python benchmarks/record_miniature.py [--seeds 0 1 2] [--epochs 5] [--learning-rate 3e-3] [--train-size 500]
        [--dev-size 100] [--test-size 60] [--model DIR]

Knowledge-enhanced word features (issue 32) beside E and W: ``--features entity word knowbert --knowbert-model
RUN/model`` fine-tunes a KnowBert model trained from the same demo model (``benchmarks/knowbert_demo.py``) with
``features="knowbert"`` (its layer reads the embedded kb's mentions of each query and passage); the tables then get
a KnowBert column and KnowBert - W.

``--smoke``: 16 training, 4 dev and 2 test queries per language, one seed, one epoch, the tiny demo model and a
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
    from probes.transfer.miniature.qa import QaSettings
    from probes.transfer.miniature.record import write_record_miniature
    from probes.transfer.runs.record import evaluate_record, finetune_record

    torch.set_num_threads(args.threads)
    model = args.model or demo_model()
    data = args.work / "data"
    sizes = QaSettings(train_size=args.train_size, dev_size=args.dev_size, test_size=args.test_size)
    if not (data / "manifest.json").exists():
        write_record_miniature(kb.default_db(), data, overwrite=True, settings=sizes)
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    tests = [(lang, data / "test" / f"test.{lang}.json") for lang in manifest["languages"]]
    results: dict = {
        "model": str(model),
        "manifest": manifest,
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "runs": [],
    }
    for seed in args.seeds:
        for features in args.features:
            out = args.work / f"record-{features}-{seed}"
            started = time.perf_counter()
            chosen = args.knowbert_model if features == "knowbert" else model
            options = {"features": features, "model": chosen, "config": finetune_config(args, seed), "lang": "en"}
            files = (data / "train.en.json", data / "dev.en.json")
            report = finetune_record(*files, output=out, overwrite=True, progress=False, **options)
            trained = time.perf_counter() - started
            scores = evaluate_record(out, tests, progress=False)
            timing = {"train_seconds": round(trained, 1), "seconds": round(time.perf_counter() - started, 1)}
            results["runs"].append({"seed": seed, "features": features, **timing, "history": report.history})
            results["runs"][-1].update(scores.to_dict())
            rows = {r["lang"]: r for r in scores.rows}
            log_run(results, args.output, f"record {features} seed {seed}", rows, ("exact_match", "f1"))
    return results


def chance(data: Path) -> dict[str, float]:
    """Per test language, the expected EM x100 of answering with a passage mention picked at random (the mean over
    the queries of the share of mentions that are the answer): the floor the fine-tuned models are compared to."""
    from probes.transfer import read_record

    out = {}
    for path in sorted((data / "test").glob("test.*.json")):
        examples = read_record(path).examples
        out[path.name.split(".")[1]] = 100 * statistics.mean(len(e.answer_spans) / len(e.entities) for e in examples)
    return out


def tables(results: dict) -> str:
    """Markdown: per language, mean (standard deviation) over seeds of EM and of F1 x100, E against W."""
    from common import e_vs_w_table
    from transfer_miniature import knowbert_table

    parts = []
    for metric, name in (("exact_match", " EM"), ("f1", " F1")):
        score = {
            (r["features"], r["seed"], row["lang"]): 100 * row[metric]
            for r in results["runs"]
            for row in r["languages"]
        }
        with_knowbert = any(k[0] == "knowbert" for k in score)
        parts.append(f"Test{name}:\n\n{knowbert_table(score)}" if with_knowbert else e_vs_w_table(score, name))
    floor = chance(Path(results["settings"]["work"]) / "data")
    zero = statistics.mean(v for k, v in floor.items() if k != "en")
    parts.append(f"A passage mention picked at random: EM {floor['en']:.1f} (en), {zero:.1f} (average of the others).")
    return "\n\n".join(parts)


def main() -> None:
    from common import miniature_parser, smoke_miniature

    ap = miniature_parser(__doc__, "record", train_size=500, learning_rate=3e-3)
    ap.add_argument("--dev-size", type=int, default=100)
    ap.add_argument("--test-size", type=int, default=60)
    ap.add_argument("--features", nargs="+", default=["entity", "word"], choices=["entity", "word", "knowbert"])
    ap.add_argument("--knowbert-model", type=Path, help="a KnowBert model folder (--features knowbert)")
    args = ap.parse_args()
    smoke_miniature(args, train_size=16, dev_size=4, test_size=2)
    if "knowbert" in args.features and not (args.knowbert_model or args.table_only):
        ap.error("--features knowbert needs --knowbert-model")
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.table_only else run(args)
    print("\n" + tables(results))


if __name__ == "__main__":
    main()
