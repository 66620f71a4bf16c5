"""KnowBert in the demo world (issue 32): a knowledge layer trained on the demo model (stage 1, the linker alone;
then a short stage 2, masked LM + linking) on the demo's training documents, and its linking accuracy per language
on the demo's linking test set, beside our ``combined`` linker with the same demo model and the prior alone.

The linking test set (``demo.json`` of the demo model, :func:`probes.demo_eval.demo_linking_docs`): sentences
naming a city whose name a city in another country shares, in languages the demo model never saw that city's
sentence in; gold mentions are given (as ``mluke eval-demo`` does). Accuracy counts, like
:func:`probes.linking_eval.evaluate_linking` with no NIL threshold, a mention right when the chosen entity is the
gold one; a mention the selector could not give candidates counts as wrong. KnowBert is scored twice: its best
candidate (``knowbert``, like-for-like with ``combined``, which never answers NIL here) and its own decision with
NULL (``knowbert-null``: NULL when no candidate scores above the threshold, always wrong here).

    python benchmarks/knowbert_demo.py [--model DEMO_MODEL_DIR] [--work /tmp/knowbert-demo]
        [--stage1-steps 300] [--stage2-steps 60] [--batch-size 32] [--learning-rate 1e-3] [--seed 0]

Training resumes from ``--work`` if a run is there (so a finished run is only evaluated again). Writes
``benchmarks/results/knowbert_demo.json`` and prints a markdown table. ``--smoke``: one step of each stage from
the tiny demo model, batch 2, everything in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from common import add_smoke, bench_threads, demo_folder, smoke_demo, smoke_folder

HERE = Path(__file__).resolve().parent


def knowbert_counts(model_dir: Path, docs: list, db, batch: int = 64) -> dict[str, Counter]:
    """Per language: mentions, in_kb, correct (best candidate), correct_null (KnowBert's decision), ambiguous,
    ambiguous_correct."""
    import torch

    from kb.mentions import MentionIndex
    from mluke.knowbert import CandidateSelector, collate
    from mluke.knowbert.run import open_knowbert
    from mluke.pretraining.corpus import Document

    model, tokenizer = open_knowbert(model_dir)
    model.eval()
    keys = model.entities.keys
    index = MentionIndex.for_db(db)  # all the kb's languages: the index training used (cached)
    selector = CandidateSelector(tokenizer, index, model.entities.key_to_row, max_length=128)
    windows = [
        selector.document(Document(d.lang, d.text, [(m.start, m.end, m.key) for m in d.mentions]))[0] for d in docs
    ]
    best: list[list[int]] = []
    chosen: list[list[int]] = []
    for i in range(0, len(windows), batch):
        part = windows[i : i + batch]
        ids, mask, cands = collate(part, tokenizer.pad_id)
        with torch.no_grad():
            scores = model(ids, mask, cands, linking_only=True).linking_scores
            assert scores is not None
            decision = model.kar.decode(scores)
        best += scores.masked_fill(~cands.candidate_mask, float("-inf")).argmax(-1).tolist()
        chosen += decision.candidate.tolist()
    counts: dict[str, Counter] = defaultdict(Counter)
    for doc, window, top, pick in zip(docs, windows, best, chosen):
        c = counts[doc.lang]
        where = {span: j for j, span in enumerate(window.char_spans)}
        for m in doc.mentions:
            c["mentions"] += 1
            if m.key not in db:
                continue
            c["in_kb"] += 1
            j = where.get((m.start, m.end))
            ambiguous = len(index.candidates(doc.lang, m.surface)) >= 2
            c["ambiguous"] += ambiguous
            if j is None:
                continue  # no candidates: wrong
            rows = window.entity_ids[j]
            hit = keys[rows[top[j]]] == m.key
            c["correct"] += hit
            c["correct_null"] += pick[j] >= 0 and keys[rows[pick[j]]] == m.key
            c["ambiguous_correct"] += hit and ambiguous
    return counts


def run(args: argparse.Namespace) -> dict:
    import torch

    from kb import open_db
    from mluke.knowbert.run import train_knowbert
    from probes.demo_eval import demo_linking_docs, evaluate_demo_linking

    torch.set_num_threads(args.threads)
    db = open_db(None)
    t0 = time.perf_counter()
    model_dir = train_knowbert(
        args.work,
        model=str(args.model),
        documents="demo",
        stage1_steps=args.stage1_steps,
        stage2_steps=args.stage2_steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
        save_every=50,
        log_every=min(10, args.stage1_steps),  # so that the log has a record of stage 1, read below
        device="cpu",
        progress=False,
    )
    train_s = time.perf_counter() - t0
    docs = demo_linking_docs(args.model)
    t0 = time.perf_counter()
    kb_counts = knowbert_counts(model_dir, docs, db)
    kb_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = evaluate_demo_linking(args.model, db=db, methods=("prior", "combined"), progress=False)
    combined_s = time.perf_counter() - t0
    rows = {(r["lang"], r["method"]): r for r in report.rows}
    total: Counter = Counter()
    table = []
    for lang in sorted(kb_counts):
        c = kb_counts[lang]
        total.update(c)
        table.append(_row(lang, c, rows[(lang, "combined")], rows[(lang, "prior")]))
    table.append(_row("all", total, rows[("all", "combined")], rows[("all", "prior")]))
    log = [json.loads(line) for line in (Path(args.work) / "log.jsonl").read_text().splitlines()]
    return {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "selection": json.loads((Path(args.work) / "selection.json").read_text()),
        "last_log": {stage: [r for r in log if r["stage"] == stage][-1] for stage in ("linker", "joint")},
        "seconds": {"train_or_resume": train_s, "knowbert_eval": kb_s, "combined_eval": combined_s},
        "rows": table,
    }


def _row(lang: str, c: Counter, combined: dict, prior: dict) -> dict:
    ratio = lambda a, b: a / b if b else None  # noqa: E731
    return {
        "lang": lang,
        "mentions": c["in_kb"],
        "knowbert": ratio(c["correct"], c["in_kb"]),
        "knowbert_null": ratio(c["correct_null"], c["in_kb"]),
        "combined": combined["accuracy"],
        "prior": prior["accuracy"],
        "ambiguous": c["ambiguous"],
        "knowbert_ambiguous": ratio(c["ambiguous_correct"], c["ambiguous"]),
        "combined_ambiguous": combined["ambiguous_accuracy"],
        "prior_ambiguous": prior["ambiguous_accuracy"],
    }


def to_markdown(result: dict) -> str:
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
    columns = ["lang", "mentions", "KnowBert", "KnowBert (NULL)", "combined", "prior", "ambiguous"]
    columns += ["KnowBert amb.", "combined amb.", "prior amb."]
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    for r in result["rows"]:
        lines.append(
            f"| {r['lang']} | {r['mentions']} | {pct(r['knowbert'])} | {pct(r['knowbert_null'])} | "
            f"{pct(r['combined'])} | {pct(r['prior'])} | {r['ambiguous']} | {pct(r['knowbert_ambiguous'])} | "
            f"{pct(r['combined_ambiguous'])} | {pct(r['prior_ambiguous'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="the demo model folder (default: the demo model of $MLUKE_HOME)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/knowbert-demo"))
    parser.add_argument("--stage1-steps", type=int, default=300)
    parser.add_argument("--stage2-steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=bench_threads())
    add_smoke(parser)
    args = parser.parse_args()
    out = HERE / "results" / "knowbert_demo.json"
    if args.smoke:
        args.work, args.model, args.stage1_steps, args.stage2_steps, args.batch_size = (
            smoke_folder(),
            smoke_demo(),
            1,
            1,
            2,
        )
        out = args.work / "knowbert_demo.json"
    args.model = args.model or demo_folder(False)
    result = run(args)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(to_markdown(result))
    print(json.dumps({k: result[k] for k in ("selection", "last_log", "seconds")}, indent=1))


if __name__ == "__main__":
    main()
