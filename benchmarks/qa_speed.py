"""QA speed: linking an XQuAD-sized file end to end, and QA inference at the mluke-base shape (random weights)
against transformers' ``LukeForQuestionAnswering`` on the same windows.

Data: ``--examples`` English question-passage pairs from the miniature QA generator
(``probes.transfer.miniature.qa.generate_qa``), passages of 8 to 24 kb-fact sentences (about 110 to 330
word pieces; XQuAD's paragraphs are about 140 words), written as one SQuAD-format file.

Linking (``--examples 1190`` pairs by default, XQuAD's size per language; in the parent process): the
embedded kb's mention index for English loaded from the cache (its first build timed apart), then
``read_squad`` + ``cached_links`` with an empty cache (cold) and again (served from the cache).

Inference (the first ``--infer-examples`` (96) pairs): every passage cut into windows of at most 384 pieces
(``qa_rows``, stride 128), entity tokens over the names the kb finds (their keys hashed to ids of the random
1.2M-entity table, the same for every method). Timed: building the rows, collating, the forward pass and
decoding the best span of each question (at most 30 pieces, over all its windows). Methods, each in a fresh
process, interleaved, ``--repeats`` times:

- ``transformers-padded``: ``LukeForQuestionAnswering`` with our model's weights, batches of 8 windows in
  file order padded to 384 pieces (what the transformers QA example script does by default), and its n-best
  decoding (the 20 best starts x 20 best ends of each window, checked one by one in Python);
- ``transformers-sorted``: the same model and decoding, windows batched as ours (by length, padded to the
  longest in the batch), to separate the batching from the rest;
- ``ours``: :func:`mluke.finetuning.qa.predict_answers` (batches sorted by length, vectorised decoding).

The script fails unless every method picks the same answer for every question.

    python benchmarks/qa_speed.py [--examples 1190] [--infer-examples 96] [--repeats 2] [--smoke]

``--smoke``: 9 pairs linked and answered, a 2-layer checkpoint, one round, all in a temporary folder.
"""

from __future__ import annotations

import json
import time
import zlib
from pathlib import Path

from common import (
    bench_threads,
    benchmark_parser,
    best_runs,
    checkpoint_entities,
    make_checkpoint,
    peak_rss_mb,
    run_counted,
    smoke_folder,
)

BATCH, MAX_LENGTH, STRIDE, N_BEST, MAX_ANSWER = 8, 384, 128, 20, 30
METHODS = ["transformers-padded", "transformers-sorted", "ours"]


def make_examples(n: int) -> list:
    """``n`` English pairs with passages of 8-24 sentences (ids unique)."""
    import kb
    from probes.transfer.miniature.qa import generate_qa
    from probes.transfer.readers.qa import QaExample

    out: list = []
    sizes = list(range(8, 25, 2))
    per = -(-n // len(sizes))
    for k in sizes:
        sets = generate_qa(kb.default_db(), ["en"], seed=k, train_size=0, dev_size=0, test_size=per, sentences=k)
        out += [QaExample(f"s{k}-{e.id}", e.question, e.context, e.answers, lang="en") for e in sets["test"]["en"]]
    order = sorted(range(len(out)), key=lambda i: zlib.crc32(out[i].id.encode()))  # mix the lengths, seeded
    return [out[i] for i in order][:n]


def linking(work: Path, n: int) -> dict:
    """Seconds to link ``n`` pairs from a file: index load, cold (no cache) and cached."""
    import os

    import kb
    from kb.mentions import MentionIndex
    from probes.transfer.readers.qa import read_squad, write_squad
    from probes.transfer.runs.qa_linking import cached_links

    os.environ["MLUKE_HOME"] = str(work / "home")
    path = work / f"xquad-sized-{n}.json"
    if not path.exists():
        write_squad(make_examples(n), path, overwrite=True)
    db = kb.default_db()
    for f in (work / "home").glob("mentions-*.sqlite"):
        f.unlink()  # time the index's first build too
    t = time.perf_counter()
    MentionIndex.for_db(db, languages=["en"])
    first = time.perf_counter() - t
    t = time.perf_counter()
    index = MentionIndex.for_db(db, languages=["en"])
    load = time.perf_counter() - t
    result = {"pairs": n, "index_first_build_s": first, "index_load_s": load}
    for name in ("cold", "cached"):
        if name == "cold":
            for f in (work / "home" / "qa-links").glob("*.json"):
                f.unlink()
        t = time.perf_counter()
        data = read_squad(path, lang="en")
        links = cached_links(path, data.examples, index, lang="en")
        result[f"{name}_s"] = time.perf_counter() - t
    result["names_per_pair"] = sum(len(v["question"]) + len(v["context"]) for v in links.values()) / n
    result["unique_passages"] = len({e.context for e in data.examples})
    return result


def prepare(work: Path, smoke: bool = False) -> Path:
    """Our QA model (entity features) from the random mluke-base checkpoint (the smallest one in a smoke run),
    saved once."""
    import mluke
    from mluke.finetuning import new_model, save_transfer

    checkpoint, out = work / "mluke-base-random", work / "qa-speed" / "qa-e"
    if not (checkpoint / "model.safetensors").is_file():
        make_checkpoint(checkpoint, smoke=smoke)
    if not (out / "model.safetensors").is_file():
        bundle = mluke.load(checkpoint)
        save_transfer(
            new_model(bundle, "qa", "entity", ["start", "end"], settings={"seed": 0}),
            bundle.tokenizer,
            out,
            overwrite=True,
        )
    return out


def rows_of(tok, examples, n_entities: int):
    """Windows with entity tokens over the kb's names (keys hashed into the random entity table of
    ``n_entities``)."""
    import kb
    from kb.mentions import MentionIndex
    from mluke.finetuning.qa import qa_rows
    from probes.transfer.runs.qa_linking import link_examples

    links = link_examples(examples, MentionIndex.for_db(kb.default_db(), languages=["en"]), lang="en")

    def ids(names):
        return [(s, e, 4 + zlib.crc32(k.encode()) % (n_entities - 4)) for s, e, k in names]

    return qa_rows(
        tok,
        [e.question for e in examples],
        [e.context for e in examples],
        features="entity",
        question_names=[ids(links[e.id]["question"]) for e in examples],
        context_names=[ids(links[e.id]["context"]) for e in examples],
        max_length=MAX_LENGTH,
        doc_stride=STRIDE,
    )


def baseline(folder: Path):
    """``LukeForQuestionAnswering`` with our model's encoder and span classifier."""
    from safetensors.torch import load_file
    from transformers import LukeConfig, LukeForQuestionAnswering

    data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    data.pop("mluke_transfer")
    data.pop("architectures", None)
    ref = LukeForQuestionAnswering(LukeConfig.from_dict(data))
    state = load_file(str(folder / "model.safetensors"))
    state["qa_outputs.weight"], state["qa_outputs.bias"] = state.pop("classifier.weight"), state.pop("classifier.bias")
    missing, unexpected = ref.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise SystemExit(f"baseline weights do not fit: missing {missing}, unexpected {unexpected}")
    return ref.eval()


def nbest(start, end, row):
    """The transformers example's decoding of one window: 20 best starts x 20 best ends, checked in Python."""
    import numpy as np

    best = (float("-inf"), 0, 0)
    starts = np.argsort(start)[-1 : -N_BEST - 1 : -1]
    ends = np.argsort(end)[-1 : -N_BEST - 1 : -1]
    for s in starts:
        for e in ends:
            if s >= len(row.offsets) or e >= len(row.offsets) or row.offsets[s] is None or row.offsets[e] is None:
                continue
            if e < s or e - s + 1 > MAX_ANSWER:
                continue
            if start[s] + end[e] > best[0]:
                best = (float(start[s] + end[e]), int(s), int(e))
    return best


def measure(method: str, work: Path, n: int) -> dict:
    import torch

    from mluke.finetuning import load_transfer
    from mluke.finetuning.qa import collate_qa, predict_answers

    torch.set_num_threads(bench_threads())
    from mluke.models.tokenizer import MlukeTokenizer

    folder = work / "qa-speed" / "qa-e"
    if method == "ours":
        model, tok = load_transfer(folder)
    else:
        forward, tok = baseline(folder), MlukeTokenizer.from_pretrained(folder)
    examples = make_examples(n)
    warm = examples[:4]

    def run(batch_examples):
        rows = rows_of(tok, batch_examples, checkpoint_entities(folder))
        contexts = [e.context for e in batch_examples]
        if method == "ours":
            found = predict_answers(model, tok, rows, contexts, batch_size=BATCH, max_answer_length=MAX_ANSWER)
            return rows, [text for text, _ in found]
        order = list(range(len(rows)))
        if method == "transformers-sorted":
            order.sort(key=lambda k: -len(rows[k].ids))
        best: list = [(float("-inf"), "")] * len(batch_examples)
        with torch.inference_mode():
            for at in range(0, len(order), BATCH):
                part = [rows[k] for k in order[at : at + BATCH]]
                batch = collate_qa(part, pad_id=tok.pad_id)
                if method == "transformers-padded":
                    pad = MAX_LENGTH - batch["input_ids"].shape[1]
                    batch["input_ids"] = torch.nn.functional.pad(batch["input_ids"], (0, pad), value=tok.pad_id)
                    batch["attention_mask"] = torch.nn.functional.pad(batch["attention_mask"], (0, pad))
                result = forward(
                    input_ids=batch["input_ids"],
                    attention_mask=batch["attention_mask"],
                    entity_ids=batch["entity_ids"],
                    entity_position_ids=batch["entity_position_ids"],
                    entity_attention_mask=batch["entity_attention_mask"],
                )
                starts, ends = result.start_logits.numpy(), result.end_logits.numpy()
                for r, row in enumerate(part):
                    score, s, e = nbest(starts[r], ends[r], row)
                    if score > best[row.example][0]:
                        a, b = row.offsets[s][0], row.offsets[e][1]
                        best[row.example] = (score, contexts[row.example][a:b].strip())
        return rows, [text for _, text in best]

    run(warm)
    t = time.perf_counter()
    rows, answers = run(examples)
    seconds = time.perf_counter() - t
    return {
        "method": method,
        "examples_per_s": n / seconds,
        "seconds": seconds,
        "examples": n,
        "windows": len(rows),
        "pieces": sum(len(r.ids) for r in rows),
        "entities": sum(len(r.slots) for r in rows),
        "answers": answers,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--examples", type=int, default=1190, help="pairs to link")
    ap.add_argument("--infer-examples", type=int, default=96, help="pairs to answer")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "qa_speed.json")
    ap.add_argument(
        "--linking-only", action="store_true", help="re-measure linking, keep the inference figures of --out"
    )
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.work, args.infer_examples)))
        return
    if args.smoke:
        args.work, args.repeats, args.examples, args.infer_examples = smoke_folder(), 1, 9, 9
        args.out = args.work / "qa_speed.json"
    args.work.mkdir(parents=True, exist_ok=True)
    link = linking(args.work, args.examples)
    print(json.dumps(link), flush=True)
    if args.linking_only:
        report = json.loads(args.out.read_text(encoding="utf-8"))
        report["linking"] = link
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        return
    prepare(args.work, smoke=args.smoke)
    results = run_counted(__file__, METHODS, args, "--infer-examples")
    best = best_runs(results, "examples_per_s")
    answers = {m: r["answers"] for m, r in best.items()}
    same = all(a == answers["ours"] for a in answers.values())
    summary = {m: {k: v for k, v in r.items() if k != "answers"} for m, r in best.items()}
    base = best["transformers-padded"]["examples_per_s"]
    for m in summary:
        summary[m]["x_transformers_padded"] = summary[m]["examples_per_s"] / base
        summary[m]["rounds_examples_per_s"] = [r["examples_per_s"] for r in results[m]]
    report = {"linking": link, "inference": summary, "same_answers": same}
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    if not same:
        diff = [
            (i, {m: answers[m][i] for m in answers})
            for i in range(len(answers["ours"]))
            if len({answers[m][i] for m in answers}) > 1
        ]
        raise SystemExit(f"the methods disagree on {len(diff)} answers, e.g. {diff[:3]}")


if __name__ == "__main__":
    main()
