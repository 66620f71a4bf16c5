"""End-to-end linking with KnowBert's integrated linker next to our linkers, in the demo world (issue 32).

One report (:func:`probes.linking_eval.evaluate_linking` with one linker per method): the demo's linking test set
(:func:`probes.demo_eval.demo_linking_docs`: sentences naming a city whose name a city in another country shares,
gold mentions = the city and its country), scored

- with the gold spans given: accuracy (``KnowBert``'s NULL decisions count as wrong; the other methods run with
  NIL threshold 0, so they always answer), and on the ambiguous (city) mentions;
- end to end: each linker detects the mentions itself; precision, recall and F1 of its non-NIL (span, entity)
  pairs against the gold ones (a detected name that is no gold mention, e.g. a third place named in the
  sentence, costs precision to every method alike).

``knowbert`` is :class:`mluke.KnowBertLinker` over one or more KnowBert model folders, one per training seed
(``benchmarks/knowbert_demo.py --seed N`` trains one from the same demo model: stage 1 300 steps + stage 2 60
steps); ``prior``, ``combined`` and ``global`` are :class:`mluke.Linker` over the demo model. Those three do not
depend on the KnowBert seed (same model, same documents, deterministic): they are scored once. With several
KnowBert folders the script also prints mean and sample standard deviation over them for every (language, score),
and the macro average over languages beside the micro-averaged ``all`` row.

    python benchmarks/knowbert_linking.py --knowbert-model /tmp/kb-seed0/model [/tmp/kb-seed1/model ...] \
        [--model DEMO_MODEL_DIR] [--methods prior,combined,global] [--threads 2]

Writes ``benchmarks/results/knowbert_linking.json`` and prints the markdown tables. ``--smoke``: two KnowBert
models trained for one step per stage from the tiny demo model, everything in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import add_smoke, bench_threads, knowbert_models, smoke_folder

HERE = Path(__file__).resolve().parent


def run(args: argparse.Namespace) -> dict:
    import torch

    import mluke
    from kb import open_db
    from probes.demo_eval import demo_linking_docs
    from probes.linking_eval import evaluate_linking

    torch.set_num_threads(args.threads)
    db = open_db(None)
    docs = demo_linking_docs(args.model)
    languages = sorted({d.lang for d in docs})
    plain = mluke.Linker(str(args.model), db, languages=languages)
    t0 = time.perf_counter()
    baseline = evaluate_linking(docs, dict.fromkeys(args.methods.split(","), plain), end_to_end=True, progress=False)
    seconds = {"baselines": time.perf_counter() - t0}
    seeds = []
    for i, folder in enumerate(args.knowbert_model):
        t0 = time.perf_counter()
        linker = mluke.KnowBertLinker(str(folder), db, index=plain.index)
        seeds.append(evaluate_linking(docs, {"knowbert": linker}, end_to_end=True, progress=False))
        seconds[f"knowbert_{i}"] = time.perf_counter() - t0
    return {
        "settings": {k: json.loads(json.dumps(v, default=str)) for k, v in vars(args).items()},
        "documents": len(docs),
        "seconds": seconds,
        "baselines": baseline.to_dict(),
        "knowbert": [r.to_dict() for r in seeds],
        "summary": summarise(baseline.rows, [r.rows for r in seeds]),
        "markdown": [baseline.to_markdown()] + [r.to_markdown() for r in seeds],
    }


SCORES = ("accuracy", "ambiguous_accuracy", "f1")


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    return mean, sd


def summarise(baseline: list[dict], seeds: list[list[dict]]) -> list[dict]:
    """One row per (language, method) with mean and sd of each score over the runs (one run for the
    seed-independent baselines); the ``macro`` language is the mean over languages of each run's scores."""
    runs = {("baseline", 0): baseline} | {("knowbert", i): rows for i, rows in enumerate(seeds)}
    values: dict[tuple[str, str], dict[str, list[float]]] = {}
    for rows in runs.values():
        per_method: dict[str, dict[str, list[float]]] = {}
        for r in rows:
            cell = values.setdefault((r["lang"], r["method"]), {s: [] for s in SCORES})
            for score in SCORES:
                if r[score] is not None:
                    cell[score].append(r[score])
                    if r["lang"] != "all":
                        per_method.setdefault(r["method"], {s: [] for s in SCORES})[score].append(r[score])
        for method, scores in per_method.items():
            cell = values.setdefault(("macro", method), {s: [] for s in SCORES})
            for score, got in scores.items():
                cell[score].append(sum(got) / len(got))
    out = []
    for (lang, method), cell in values.items():
        row: dict = {"lang": lang, "method": method, "runs": max(len(v) for v in cell.values())}
        for score, got in cell.items():
            row[score], row[score + "_sd"] = mean_sd(got) if got else (None, None)
        out.append(row)
    order = lambda r: (r["lang"] in ("all", "macro"), r["lang"], r["method"])  # noqa: E731
    return sorted(out, key=order)


def to_markdown(summary: list[dict]) -> str:
    """Per language, one column per (method, score): mean ± sd (x100) for KnowBert, the single value otherwise."""
    methods = sorted({r["method"] for r in summary}, key=lambda m: (m != "knowbert", m))
    cells = {(r["lang"], r["method"]): r for r in summary}
    head = ["lang"] + [f"{m} {s.replace('_accuracy', ' acc.')}" for s in SCORES for m in methods]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for lang in dict.fromkeys(r["lang"] for r in summary):
        row = [lang]
        for score in SCORES:
            for m in methods:
                r = cells.get((lang, m))
                if r is None or r[score] is None:
                    row.append("-")
                elif r["runs"] > 1:
                    row.append(f"{100 * r[score]:.1f} ± {100 * r[score + '_sd']:.1f}")
                else:
                    row.append(f"{100 * r[score]:.1f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--knowbert-model", type=Path, nargs="+", help="one folder per seed (required)")
    parser.add_argument("--model", type=Path, help="the demo model folder (default: the demo model of $MLUKE_HOME)")
    parser.add_argument("--methods", default="prior,combined,global")
    parser.add_argument("--threads", type=int, default=bench_threads())
    add_smoke(parser)
    args = parser.parse_args()
    knowbert_models(parser, args)
    result = run(args)
    out = (smoke_folder() if args.smoke else HERE / "results") / "knowbert_linking.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(to_markdown(result["summary"]))
    runs = len(result["knowbert"])
    print(f"{result['documents']} documents, KnowBert over {runs} seed(s), {sum(result['seconds'].values()):.0f} s")


if __name__ == "__main__":
    main()
