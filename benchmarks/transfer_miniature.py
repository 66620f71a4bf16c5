"""The miniature cross-lingual transfer experiment: NER and relation extraction sets made from the embedded
kb in 24 languages (``probes.transfer.miniature``), fine-tuned on English with the demo model and evaluated
zero-shot on every language, with entity features (mLUKE-E) and word features (mLUKE-W), several seeds.

Writes ``benchmarks/results/transfer_miniature.json`` (every score) and prints a table like the mLUKE
paper's Table 3: per language and on average, the mean and spread over seeds, E against W.

RE is also scored on subsets of the test examples by what the model has seen
(:mod:`probes.transfer.metrics.re_subsets`): facts stated neither in the English fine-tuning data nor in the
pretraining facts listed in the demo model's ``demo.json`` (``unseen``), facts seen in either, examples naming a
held-out entity, and the negatives;
pooled over the 23 zero-shot languages and for English (``re_subsets`` in the JSON; ``--subsets-only``
recomputes them from the fine-tuned models of an earlier run).

    python benchmarks/transfer_miniature.py [--seeds 0 1 2] [--epochs 5] [--learning-rate 1e-3] [--model DIR]

Knowledge-enhanced word features (issue 32) beside E and W: ``--features entity word knowbert --knowbert-model
RUN/model`` fine-tunes a KnowBert model trained from the same demo model (``benchmarks/knowbert_demo.py``) with
``features="knowbert"``; the tables then get a KnowBert column. With one KnowBert folder per seed
(``--knowbert-model SEED0/model SEED1/model ...``, as many as ``--seeds``, in their order), fine-tuning seed ``i``
starts from the ``i``-th: the spread over seeds then covers the KnowBert training seed too.

``--smoke``: 16 training, 4 dev and 2 test examples per language and task, one seed, one epoch, the tiny demo
model and a KnowBert model trained from it for one step per stage (all three kinds of features), the RE subsets,
in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import add_smoke, bench_threads, smoke_miniature

HERE = Path(__file__).resolve().parent


def run(args: argparse.Namespace) -> dict:
    import torch
    from common import finetune_config

    import kb
    from kb.files import write_json
    from mluke.demo.model import demo_model
    from probes.transfer import evaluate, finetune
    from probes.transfer.miniature import write_miniature

    torch.set_num_threads(args.threads)  # a small model: one thread is as fast, and robust on a shared machine
    work = args.work
    model = args.model or demo_model()
    data = (
        write_miniature(kb.default_db(), work / "data", seed=0, **args.data_sizes)
        if not (work / "data" / "manifest.json").exists()
        else work / "data"
    )
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    settings = {
        k: (_shown(v) if isinstance(v, Path) else [_shown(p) for p in v] if k == "knowbert_model" and v else v)
        for k, v in vars(args).items()
    }
    results: dict = {"model": str(model), "manifest": manifest, "settings": settings, "runs": []}
    every_run = {"model": model, "overwrite": True, "progress": False}
    for task in args.tasks:
        tests = sorted((p.parent.name, p) for p in (data / task).glob("*/test.txt"))
        for seed in args.seeds:
            for features in args.features:
                out = work / f"{task}-{features}-{seed}"
                options = {"output": out, "features": features, "config": finetune_config(args, seed), **every_run}
                if features == "knowbert":  # the kb's mentions are found per language: the training data's is en
                    options |= {"model": knowbert_model(args, seed), "lang": "en"}
                started = time.perf_counter()
                report = finetune(task, data / task / "en" / "train.txt", data / task / "en" / "dev.txt", **options)
                scores = evaluate(task, out, tests, progress=False)
                results["runs"].append(
                    {
                        "task": task,
                        "seed": seed,
                        "features": features,
                        "seconds": round(time.perf_counter() - started, 1),
                        "history": report.history,
                        "languages": scores.rows,
                        "average": scores.average,
                    }
                )
                key = "f1" if task == "ner" else "macro_f1"
                english = scores.rows[[r["lang"] for r in scores.rows].index("en")]
                print(
                    f"{task} {features} seed {seed}: en {100 * english[key]:.1f}"
                    f", average {100 * scores.average[key]:.1f} ({results['runs'][-1]['seconds']} s)",
                    flush=True,
                )
    if "re" in args.tasks:
        results["re_subsets"] = re_subsets(args, data)
    write_json(results, args.output, overwrite=True)
    return results


def knowbert_model(args: argparse.Namespace, seed: int) -> Path:
    """The KnowBert folder fine-tuning seed ``seed`` starts from: the only one, or the seed's own."""
    models = args.knowbert_model
    return models[0] if len(models) == 1 else models[args.seeds.index(seed)]


def re_subsets(args: argparse.Namespace, data: Path) -> dict:
    """Subset scores (see :mod:`probes.transfer.metrics.re_subsets`) of every fine-tuned RE model of the run."""
    import kb
    from mluke.demo.model import demo_model
    from mluke.finetuning import load_transfer, predict_relations
    from probes.transfer.metrics.re_subsets import kb_facts_as_relations, subset_scores, tag_examples
    from probes.transfer.miniature import generate_re, heldout_entities
    from probes.transfer.readers.relations import read_re

    db = kb.default_db()
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    seed = manifest.get("seed", 0)
    sizes = manifest["sizes"]["re"]  # the sizes the files were written with
    splits = generate_re(db, seed=seed, train_size=sizes["train"], dev_size=sizes["dev"], test_size=sizes["test"])
    record = Path(args.model or demo_model()) / "demo.json"  # the (fact, language) pairs the model trained on
    if not record.is_file():
        raise SystemExit(f"{record} is missing: the RE subsets need the pretraining facts of a demo model")
    pretraining = kb_facts_as_relations(
        (t["subject"], t["property"], t["object"]) for t in json.loads(record.read_text(encoding="utf-8"))["train"]
    )
    tags = tag_examples(splits, heldout_entities(db, seed=seed), pretraining)
    tests = {
        lang: read_re(path, lang=lang).examples
        for lang, path in sorted((p.parent.name, p) for p in (data / "re").glob("*/test.txt"))
    }
    for lang, examples in tests.items():  # the files on disk are the generated sets
        if [(e.id, e.text) for e in examples] != [(e.id, e.text) for e in splits[lang]["test"].examples]:
            raise SystemExit(f"{data / 're' / lang / 'test.txt'} is not generate_re(seed={seed})'s test set")
    out: dict = {"pretraining_facts": len(pretraining), "runs": []}
    for seed_ in args.seeds:
        for features in [f for f in args.features if f in ("entity", "word")]:
            model, tok = load_transfer(args.work / f"re-{features}-{seed_}")
            zero_shot, zero_pred, en = [], [], {}
            for lang, examples in tests.items():
                predicted = predict_relations(
                    model, tok, [e.text for e in examples], [(e.head, e.tail) for e in examples], batch_size=16
                )
                if lang == "en":
                    en = subset_scores(examples, predicted, tags)
                else:
                    zero_shot += examples
                    zero_pred += predicted
            out["runs"].append(
                {"seed": seed_, "features": features, "en": en, "zero_shot": subset_scores(zero_shot, zero_pred, tags)}
            )
    return out


def subsets_table(results: dict) -> str:
    """Markdown: per subset, examples and mean (spread) over seeds of macro F1 and accuracy x100, E and W."""
    import statistics

    from probes.transfer.metrics.re_subsets import SUBSETS

    runs = results["re_subsets"]["runs"]
    lines = [
        "| test examples | where | examples | E macro F1 | W macro F1 | E accuracy | W accuracy |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for where in ("zero_shot", "en"):
        for subset in SUBSETS:
            cells = []
            for key in ("macro_f1", "accuracy"):
                for features in ("entity", "word"):
                    values = [
                        100 * r[where][subset][key]
                        for r in runs
                        if r["features"] == features and r[where][subset]["examples"]
                    ]
                    cells.append(f"{statistics.mean(values):.1f} ({statistics.pstdev(values):.1f})" if values else "-")
            n = runs[0][where][subset]["examples"]
            lines.append(
                f"| {subset} | {'23 languages' if where == 'zero_shot' else 'en'} | {n} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (the results file is committed)."""
    path = path.resolve()
    return path.relative_to(HERE.parent).as_posix() if path.is_relative_to(HERE.parent) else str(path)


def table(results: dict, task: str) -> str:
    """Markdown: per language, mean (standard deviation) over seeds of F1 x100 for E and W, and E - W."""
    from common import e_vs_w_table

    key = "f1" if task == "ner" else "macro_f1"
    score = {
        (r["features"], r["seed"], row["lang"]): 100 * row[key]
        for r in results["runs"]
        if r["task"] == task
        for row in r["languages"]
    }
    if any(k[0] == "knowbert" for k in score):
        return knowbert_table(score)
    return e_vs_w_table(score)


def knowbert_table(score: dict[tuple[str, int, str], float]) -> str:
    """Markdown: per language, mean (standard deviation) over seeds for E, W and KnowBert features, and
    KnowBert - W (the knowledge layer's gain over the same word features), then the zero-shot average."""
    import statistics

    langs = sorted({k[2] for k in score}, key=lambda lang: (lang != "en", lang))
    seeds = sorted({k[1] for k in score})
    names = [f for f in ("entity", "word", "knowbert") if any(k[0] == f for k in score)]

    def cell(features: str, lang: str | None) -> tuple[float, float]:
        values = [
            score[(features, s, lang)] if lang else statistics.mean(score[(features, s, x)] for x in langs if x != "en")
            for s in seeds
        ]
        return statistics.mean(values), statistics.pstdev(values)

    head = {"entity": "mLUKE-E", "word": "mLUKE-W", "knowbert": "KnowBert"}
    lines = ["| language | " + " | ".join(head[f] for f in names) + " | KnowBert - W |"]
    lines.append("|---|" + "---:|" * (len(names) + 1))
    for lang in [*langs, None]:
        cells = {f: cell(f, lang) for f in names}
        gain = f"{cells['knowbert'][0] - cells['word'][0]:+.1f}" if "word" in cells else "-"
        shown = " | ".join(f"{m:.1f} ({sd:.1f})" for m, sd in cells.values())
        lines.append(f"| {lang or '**average (23, zero-shot)**'} | {shown} | {gain} |")
    return "\n".join(lines)


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
    ap.add_argument("--threads", type=int, default=bench_threads(1))
    ap.add_argument("--features", nargs="+", default=["entity", "word"], choices=["entity", "word", "knowbert"])
    ap.add_argument(
        "--knowbert-model",
        type=Path,
        nargs="+",
        help="KnowBert model folder(s) for --features knowbert: one for every seed, or one per seed in --seeds order",
    )
    ap.add_argument("--table-only", action="store_true", help="print the tables of an earlier run's JSON")
    ap.add_argument(
        "--subsets-only",
        action="store_true",
        help="recompute the RE subset scores from an earlier run's models and JSON",
    )
    ap.set_defaults(data_sizes={})  # the miniature sets' sizes (write_miniature's keywords; defaults there)
    add_smoke(ap)
    args = ap.parse_args()
    sizes = {f"{task}_{split}": n for task in ("ner", "re") for split, n in (("train", 16), ("dev", 4), ("test", 2))}
    smoke_miniature(args, data_sizes=sizes)
    if args.smoke:
        args.knowbert_model = [args.knowbert_model]
    if "knowbert" in args.features and args.knowbert_model is None:
        ap.error("--features knowbert needs --knowbert-model")
    if args.knowbert_model and len(args.knowbert_model) not in (1, len(args.seeds)):
        ap.error(f"--knowbert-model: give one folder, or one per seed ({len(args.seeds)})")
    if args.subsets_only:
        from kb.files import write_json

        results = json.loads(args.output.read_text(encoding="utf-8"))
        results["re_subsets"] = re_subsets(args, args.work / "data")
        write_json(results, args.output, overwrite=True)
    else:
        results = json.loads(args.output.read_text(encoding="utf-8")) if args.table_only else run(args)
    for task in ("ner", "re"):
        if any(r["task"] == task for r in results["runs"]):
            print(f"\n{task}:\n{table(results, task)}")
    if "re_subsets" in results:
        print(f"\nre, by what the model has seen:\n{subsets_table(results)}")


if __name__ == "__main__":
    main()
