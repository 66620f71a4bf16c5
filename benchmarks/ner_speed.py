"""NER speed at the mluke-base shape (random weights): inference sentences/s of our span-NER heads
(``mluke.finetuning``, entity features "E" and word features "W") against transformers'
``LukeForEntitySpanClassification`` on the same sentences and spans, and fine-tuning tokens/s of our
``TransferModel.loss`` step against a plain loop over the transformers class.

Sentences: ``--sentences`` (64) seeded English-like sentences of 10-25 words drawn from the
tokenizer's whole-word pieces (a quarter capitalised, so some words are several pieces), then ".";
every span of whole words of <= 16 pieces is scored (``mluke.finetuning.inputs.ner_rows``: E puts all
spans of a sentence in one row, split into rows of <= 128 span [MASK]s; W has one row per sentence).

Shared weights: ours E is ``new_model(bundle, "ner", "entity", [O, PER, LOC, ORG, MISC], seed 0)``,
saved once with ``save_transfer`` (``<work>/ner-speed/ner-e``); the baseline is
``LukeForEntitySpanClassification`` with the same encoder weights (``luke.*``; its unused pooler
random) and a classifier over cat(start, end, entity) whose start/end columns are zero and whose
entity columns and bias are ours, so its logits are ours up to float error. It gets our rows'
tensors (``collate``) plus ``entity_start_positions``/``entity_end_positions`` = ``slot_start``/
``slot_end``. Ours W is ``new_model(..., "word", ...)`` (``<work>/ner-speed/ner-w``; other features,
so no equality check).

Inference (timed after a 4-sentence warm-up, not the loading): building the rows (tokenizing and
enumerating spans), ``collate``, the forward pass and the argmax per span, batches of 8 rows, 2
threads, ``torch.inference_mode``. Ours runs ``model(batch)`` over rows sorted by their number of spans,
as ``predict_spans`` does (its softmax and greedy decoding are left out for every method); the
baseline runs once with rows in sentence order (a plain loop) and once sorted the same way. The script fails
unless ours E and the baseline give the same argmax on every span (in every run) and reports the largest logit
difference.

Fine-tuning: 1 warm-up step then 6 timed steps of 8 rows (the first rows, E features; random gold
spans), dropout on, AdamW lr 2e-5: ours ``TransferModel.loss(collate(rows))``, backward, step, the
scheduler step and ``zero_grad`` (what ``FineTuner`` does per step, with its optimizer); baseline
``LukeForEntitySpanClassification(**inputs, labels=...)``, backward, ``torch.optim.AdamW(fused=True)`` step (the
same fused kernel as ours; it works on CPU in torch 2.13), ``zero_grad``.
Tokens = word pieces + span entities of the rows (padding not counted).

Uses the random checkpoint of ``benchmarks/model_scoring.py`` (made there: 4.4 GB); the two transfer
models take 2.3 GB in ``<work>/ner-speed``. Each method runs in its own fresh process, interleaved,
``--repeats`` times (3 rounds: ~9 minutes on 2 quiet cores). ``--profile`` instead times one batch of
ours E and of the baseline stage by stage, then ours E over all rows batched in sentence order
against rows sorted by their number of spans (less padding), and prints the torch profiler's top ops.

    python benchmarks/ner_speed.py [--sentences 64] [--repeats 2] [--profile] [--smoke]

``--smoke``: 56 sentences (enough rows for the fine-tuning steps) on a 2-layer checkpoint that it makes in a
temporary folder, one round, then ``--profile``'s stages on 8 sentences.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from common import bench_threads, benchmark_parser, best_runs, make_checkpoint, peak_rss_mb, run_counted, smoke_folder

LABELS = ["O", "PER", "LOC", "ORG", "MISC"]
BATCH, STEPS, WARMUP = 8, 6, 4
MAX_SPAN_PIECES, MAX_ENTITIES = 16, 128
INFER = ["transformers", "transformers-sorted", "ours-E", "ours-W"]
INFER_NAMES = {  # as the table names them
    "transformers": "transformers `LukeForEntitySpanClassification` (entity features, zero word columns)",
    "transformers-sorted": "the same, rows batched by their number of spans",
    "ours-E": "ours E (`TransferModel`, entity [MASK] per span; last layer entity rows only)",
    "ours-W": "ours W (`TransferModel`, first/last piece of each span; no entities)",
}
SORTED = {"transformers-sorted", "ours-E", "ours-W"}  # rows batched by their number of spans, as predict_spans does
TRAIN = ["ft-transformers", "ft-ours-E"]


# -- data -------------------------------------------------------------------------------------
def make_sentences(tokenizer, n: int) -> list[list[str]]:
    """``n`` seeded sentences of 10-25 words (whole-word pieces of the vocabulary, a quarter capitalised), then "."."""
    rng = random.Random(0)
    words = [
        t[1:]
        for t in (tokenizer.words.id_to_token(i) for i in range(1000, 60000))
        if t and t.startswith("\u2581") and t[1:].isalpha() and t[1:].isascii() and len(t) > 3
    ]
    out = []
    for _ in range(n):
        sent = [w.capitalize() if rng.random() < 0.25 else w for w in rng.choices(words, k=rng.randint(10, 25))]
        out.append([*sent, "."])
    return out


def make_gold(sentences: list[list[str]]) -> list[list[tuple[int, int, str]]]:
    """Two seeded non-overlapping labelled spans of 1-3 words per sentence (training targets)."""
    rng = random.Random(1)
    gold = []
    for words in sentences:
        a = rng.randrange(0, len(words) // 2 - 3)
        b = rng.randrange(len(words) // 2, len(words) - 3)
        gold.append(
            [(a, a + rng.randint(1, 3), rng.choice(LABELS[1:])), (b, b + rng.randint(1, 3), rng.choice(LABELS[1:]))]
        )
    return gold


def tokens_of(rows) -> int:
    """Word pieces + real span slots (entities for E) of ``rows``."""
    return sum(len(r.ids) + sum(1 for s, _ in r.slots if s >= 0) for r in rows)


# -- models -----------------------------------------------------------------------------------
def prepare(checkpoint: Path, out: Path) -> None:
    """Our E and W models from the random checkpoint, saved once (``out/ner-e``, ``out/ner-w``)."""
    import mluke
    from mluke.finetuning import new_model, save_transfer

    if (out / "ner-e" / "model.safetensors").is_file() and (out / "ner-w" / "model.safetensors").is_file():
        return
    bundle = mluke.load(checkpoint)
    for features in ("entity", "word"):
        model = new_model(bundle, "ner", features, LABELS, settings={"seed": 0})
        save_transfer(model, bundle.tokenizer, out / f"ner-{features[0]}", overwrite=True)


def baseline(folder: Path):
    """``LukeForEntitySpanClassification`` with ours E's encoder and its classifier in the entity columns."""
    import torch
    from safetensors.torch import load_file
    from transformers import LukeConfig, LukeForEntitySpanClassification

    data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    data.pop("mluke_transfer")
    data.pop("architectures", None)
    config = LukeConfig.from_dict(data)
    assert config.num_labels == len(LABELS), config.num_labels
    ref = LukeForEntitySpanClassification(config)
    state = load_file(str(folder / "model.safetensors"))
    weight, bias = state.pop("classifier.weight"), state.pop("classifier.bias")
    missing, unexpected = ref.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith(("luke.pooler.", "classifier.")) for k in missing):
        raise SystemExit(f"baseline weights do not fit: missing {missing}, unexpected {unexpected}")
    h = config.hidden_size
    with torch.no_grad():  # transformers' features are cat(start word, end word, entity)
        ref.classifier.weight.zero_()
        ref.classifier.weight[:, 2 * h :] = weight
        ref.classifier.bias.copy_(bias)
    return ref.eval()


def baseline_inputs(batch: dict) -> dict:
    keys = ("input_ids", "attention_mask", "entity_ids", "entity_position_ids", "entity_attention_mask")
    return {
        **{k: batch[k] for k in keys},
        "entity_start_positions": batch["slot_start"],
        "entity_end_positions": batch["slot_end"],
    }


def load_method(method: str, work: Path):
    """(forward(batch) -> logits, model, tokenizer, features) of an inference or fine-tuning method."""
    from mluke.finetuning import load_transfer
    from mluke.models.tokenizer import MlukeTokenizer

    if "transformers" in method:
        ref = baseline(work / "ner-e")
        return (
            (lambda b: ref(**baseline_inputs(b)).logits),
            ref,
            MlukeTokenizer.from_pretrained(work / "ner-e"),
            "entity",
        )
    model, tok = load_transfer(work / ("ner-w" if method.endswith("W") else "ner-e"))
    return model, model, tok, model.features


# -- measuring ----------------------------------------------------------------------------------
def english_rows(tok, sentences, features: str, **gold) -> list:
    """``ner_rows`` of English ``sentences`` with this benchmark's span and entity limits (``gold``: the gold
    spans and label ids of fine-tuning rows)."""
    from mluke.finetuning.inputs import ner_rows

    en = ["en"] * len(sentences)
    return ner_rows(
        tok, sentences, en, features=features, max_span_pieces=MAX_SPAN_PIECES, max_entities=MAX_ENTITIES, **gold
    )


def infer(forward, tok, sentences, features: str, by_size: bool):
    """Rows, collate, forward and argmax over ``sentences``, rows batched in sentence order or (``by_size``)
    sorted by their number of spans as ``predict_spans`` does: (rows, [(row, logits, argmax)] in row order,
    token rows computed with padding)."""
    import torch

    from mluke.finetuning.inputs import batches, collate

    rows = english_rows(tok, sentences, features)
    order = list(range(len(rows)))
    if by_size:
        order.sort(key=lambda i: (-len(rows[i].slots), -len(rows[i].ids)))
    out, padded = {}, 0
    with torch.inference_mode():
        for k, part in enumerate(batches(rows, BATCH, order=order)):
            batch = collate(part, pad_id=tok.pad_id)
            logits = forward(batch)
            best = logits.argmax(-1)
            padded += logits.shape[0] * (batch["input_ids"].shape[1] + batch["entity_ids"].shape[1])
            out.update((i, (rows[i], logits[r], best[r])) for r, i in enumerate(order[k * BATCH : (k + 1) * BATCH]))
    return rows, [out[i] for i in range(len(rows))], padded


def measure(method: str, work: Path, n_sentences: int) -> dict:
    import torch

    torch.set_num_threads(bench_threads())
    torch.manual_seed(0)
    forward, model, tok, features = load_method(method, work)
    sentences = make_sentences(tok, n_sentences)
    if method in TRAIN:
        return measure_training(method, model, tok, sentences)
    by_size = method in SORTED
    infer(forward, tok, sentences[:WARMUP], features, by_size)
    t = time.perf_counter()
    rows, out, padded = infer(forward, tok, sentences, features, by_size)
    seconds = time.perf_counter() - t
    spans = [(row.items[k], logits[k], int(best[k])) for row, logits, best in out for k in range(len(row.items))]
    assert [s for s, _, _ in spans] == sorted(s for s, _, _ in spans), "spans out of order"
    info = {}
    if method != "ours-W":  # the span logits, compared across processes by the parent
        path = work / f"logits-{method}-{os.getpid()}.pt"
        torch.save(torch.stack([l for _, l, _ in spans]), path)
        info["logits_file"] = str(path)
    return {
        "method": method,
        "sentences_per_s": n_sentences / seconds,
        "seconds": seconds,
        "rows": len(rows),
        "spans": len(spans),
        "token_rows_with_padding": padded,
        "tokens": tokens_of(rows),
        "peak_rss_mb": peak_rss_mb(),
        "argmax": [a for _, _, a in spans],
        **info,
    }


def measure_training(method: str, model, tok, sentences) -> dict:
    import torch

    from mluke.finetuning.inputs import batches, collate
    from mluke.finetuning.training import FineTuneConfig, _optimizer, _schedule

    rows = english_rows(
        tok, sentences, "entity", gold=make_gold(sentences), label_ids={l: i for i, l in enumerate(LABELS)}
    )
    rows = rows[: (STEPS + 1) * BATCH]
    if len(rows) < (STEPS + 1) * BATCH:
        raise SystemExit(f"{len(rows)} rows: too few sentences for {STEPS + 1} fine-tuning steps of {BATCH}")
    model.train()
    if method == "ft-ours-E":
        config = FineTuneConfig(learning_rate=2e-5, batch_size=BATCH)
        optimizer = _optimizer(model, config)
        scheduler = _schedule(optimizer, 100, config.warmup)

        def step(batch):
            loss = model.loss(batch)
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            return float(loss.detach())
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01, fused=True)  # as ours

        def step(batch):
            loss = model(**baseline_inputs(batch), labels=batch["labels"]).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return float(loss.detach())

    losses = []
    for i, part in enumerate(batches(rows, BATCH)):
        if i == 1:
            t = time.perf_counter()
        losses.append(step(collate(part, pad_id=tok.pad_id)))
    seconds = time.perf_counter() - t
    tokens = tokens_of(rows[BATCH:])
    return {
        "method": method,
        "tokens_per_s": tokens / seconds,
        "seconds": seconds,
        "steps": STEPS,
        "tokens": tokens,
        "rows_per_s": STEPS * BATCH / seconds,
        "losses": [round(x, 4) for x in losses],
        "peak_rss_mb": peak_rss_mb(),
    }


# -- profile ------------------------------------------------------------------------------------
def profile(work: Path, n_sentences: int) -> None:
    """Stage-by-stage time of one batch (the first 8 rows) for ours E and the baseline, best of 3."""
    import torch

    from mluke.finetuning.inputs import collate
    from mluke.models.masked_lm import _last_layer_entity_rows

    torch.set_num_threads(bench_threads())
    _, ours, tok, _ = load_method("ours-E", work)
    _, ref, _, _ = load_method("transformers", work)
    sentences = make_sentences(tok, n_sentences)
    rows = english_rows(tok, sentences, "entity")
    batch = collate(rows[:BATCH], pad_id=tok.pad_id)
    n_words, n_ents = batch["input_ids"].shape[1], batch["entity_ids"].shape[1]
    real = int(batch["attention_mask"].sum() + batch["entity_attention_mask"].sum())
    print(
        f"batch: {BATCH} rows x ({n_words} word pieces + {n_ents} span entities) = {BATCH * (n_words + n_ents)} "
        f"token rows, {real} of them real; {len(rows)} rows for {n_sentences} sentences, "
        f"{sum(len(r.slots) for r in rows)} spans"
    )

    def best_of(fn, k=3):
        times = []
        for _ in range(k):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    with torch.inference_mode():
        luke = ours.luke
        ids = batch["input_ids"]
        mask = torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], -1)
        additive = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        stages = {}
        stages["word embeddings"] = best_of(
            lambda: luke.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
        )
        stages["entity embeddings"] = best_of(
            lambda: luke.entity_embeddings(batch["entity_ids"], batch["entity_position_ids"])
        )
        words = luke.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
        ents = luke.entity_embeddings(batch["entity_ids"], batch["entity_position_ids"])
        layer = luke.encoder.layer[0]
        stages["one full layer (words + entities)"] = best_of(lambda: layer(words, ents, additive))
        att = layer.attention
        stages["  of which self-attention block"] = best_of(lambda: att(words, ents, additive))
        a_words, a_ents = att(words, ents, additive)[:2]
        both = torch.cat([a_words, a_ents], 1)
        stages["  of which feed-forward block"] = best_of(lambda: layer.output(layer.intermediate(both), both))
        stages["  of which feed-forward, word rows only"] = best_of(
            lambda: layer.output(layer.intermediate(a_words), a_words)
        )
        stages["last layer, entity rows only (ours)"] = best_of(
            lambda: _last_layer_entity_rows(luke.encoder.layer[-1], words, ents, additive)
        )
        feats = _last_layer_entity_rows(luke.encoder.layer[-1], words, ents, additive)
        stages["classifier (ours)"] = best_of(lambda: ours.classifier(feats))
        stages["whole forward, ours E"] = best_of(lambda: ours(batch))
        stages["whole forward, transformers"] = best_of(lambda: ref(**baseline_inputs(batch)))
        inputs = baseline_inputs(batch)
        stages["  transformers LukeModel only"] = best_of(
            lambda: ref.luke(
                **{
                    k: v
                    for k, v in inputs.items()
                    if not k.startswith("entity_")
                    or k in ("entity_ids", "entity_position_ids", "entity_attention_mask")
                }
            )
        )
        for name, s in stages.items():
            print(f"{name:45s} {s * 1000:9.1f} ms")

        # padding: rows batched in sentence order (as predict_spans does) or sorted by their number of spans
        orders = {
            "sentence order": list(range(len(rows))),
            "sorted by spans": sorted(range(len(rows)), key=lambda i: (-len(rows[i].slots), -len(rows[i].ids))),
        }
        times, logits = {name: [] for name in orders}, {}
        for _ in range(2):
            for name, order in orders.items():
                t = time.perf_counter()
                out = {}
                for k in range(0, len(order), BATCH):
                    part = [rows[i] for i in order[k : k + BATCH]]
                    got = ours(collate(part, pad_id=tok.pad_id))
                    out.update({i: got[r, : len(rows[i].slots)] for r, i in enumerate(order[k : k + BATCH])})
                times[name].append(time.perf_counter() - t)
                logits[name] = torch.cat([out[i] for i in range(len(rows))])
        for name, order in orders.items():
            parts = [[rows[i] for i in order[k : k + BATCH]] for k in range(0, len(order), BATCH)]
            computed = sum(len(p) * (max(len(r.ids) for r in p) + max(len(r.slots) for r in p)) for p in parts)
            diff = logits[name] - logits["sentence order"]
            flips = int((logits[name].argmax(-1) != logits["sentence order"].argmax(-1)).sum())
            print(
                f"ours E over all {len(rows)} rows, {name}: {min(times[name]):.2f} s (best of 2), "
                f"{computed} token rows "
                f"computed for {tokens_of(rows)} real ({1 - tokens_of(rows) / computed:.1%} padding); "
                f"max |logit difference| {float(diff.abs().max()):.1e}, argmax differs on {flips} spans"
            )

        from torch.profiler import ProfilerActivity, profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            ours(batch)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


# -- main ---------------------------------------------------------------------------------------
def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--sentences", type=int, default=64)
    ap.add_argument("--profile", action="store_true", help="time the stages of one batch instead")
    ap.add_argument("--train-only", action="store_true", help="only the fine-tuning comparison")
    args = ap.parse_args()
    out = args.work / "ner-speed"
    if args.measure:
        print(json.dumps(measure(args.measure, out, args.sentences)))
        return
    if args.smoke:  # the smallest run with enough rows for the fine-tuning steps, and the profile after it
        args.work, args.repeats, args.sentences, args.profile = smoke_folder(), 1, (STEPS + 1) * BATCH, False
        out = args.work / "ner-speed"
        make_checkpoint(args.work / "mluke-base-random", smoke=True)
    checkpoint = args.work / "mluke-base-random"
    if not (checkpoint / "entity_vocab.sqlite").exists():
        raise SystemExit(f"{checkpoint} is missing: run benchmarks/model_scoring.py first")
    prepare(checkpoint, out)
    if args.profile:
        profile(out, args.sentences)
        return
    for old in out.glob("logits-*.pt"):
        old.unlink()
    methods = TRAIN if args.train_only else INFER + TRAIN
    results = run_counted(__file__, methods, args, "--sentences")
    if args.train_only:
        import statistics

        med = {m: statistics.median(r["tokens_per_s"] for r in results[m]) for m in TRAIN}
        for m in TRAIN:
            print(
                f"{m}: median {med[m]:.0f} tokens/s, rounds "
                + " / ".join(f"{r['tokens_per_s']:.0f}" for r in results[m])
            )
        ratios = [
            o["tokens_per_s"] / t["tokens_per_s"] for t, o in zip(results["ft-transformers"], results["ft-ours-E"])
        ]
        print(
            f"ours / transformers (both fused AdamW): median {med['ft-ours-E'] / med['ft-transformers']:.2f}x, "
            f"rounds {', '.join(f'{x:.2f}' for x in ratios)}"
        )
        print("fine-tuning losses per step: " + "; ".join(f"{m} {results[m][0]['losses']}" for m in TRAIN))
        return
    best = best_runs({m: results[m] for m in INFER}, "sentences_per_s")
    best.update(best_runs({m: results[m] for m in TRAIN}, "tokens_per_s"))
    r0 = results["ours-E"][0]
    print(
        f"\n{args.sentences} sentences, {r0['spans']} spans, {r0['rows']} E rows ({r0['tokens']} tokens, "
        f"{r0['token_rows_with_padding']} token rows computed with padding; "
        f"{results['transformers'][0]['token_rows_with_padding']} in sentence order), "
        f"{results['ours-W'][0]['rows']} W rows"
    )
    base = best["transformers"]["sentences_per_s"]
    print("\n| inference | sentences/s | x transformers | peak RSS (MB) |\n|---|---:|---:|---:|")
    for m in INFER:
        r = best[m]
        print(
            f"| {INFER_NAMES[m]} | {r['sentences_per_s']:.2f} | {r['sentences_per_s'] / base:.2f}x | "
            f"{r['peak_rss_mb']:.0f} |"
        )
    ft = best["ft-transformers"]["tokens_per_s"]
    print(
        "\n| fine-tuning (E features) | tokens/s | rows/s | x transformers | peak RSS (MB) |\n|---|---:|---:|---:|---:|"
    )
    for m, name in [
        ("ft-transformers", "plain loop over `LukeForEntitySpanClassification`"),
        ("ft-ours-E", "ours, `TransferModel.loss` step as in `FineTuner`"),
    ]:
        r = best[m]
        print(
            f"| {name} | {r['tokens_per_s']:.0f} | {r['rows_per_s']:.2f} | {r['tokens_per_s'] / ft:.2f}x | "
            f"{r['peak_rss_mb']:.0f} |"
        )
    for i in range(args.repeats):
        t, ts, e, w = (results[m][i]["sentences_per_s"] for m in INFER)
        ft_t, ft_o = (results[m][i]["tokens_per_s"] for m in TRAIN)
        print(
            f"round {i + 1}: transformers {t:.2f}, sorted {ts:.2f} ({ts / t:.2f}x), ours E {e:.2f} ({e / t:.2f}x, "
            f"{e / ts:.2f}x sorted), ours W {w:.2f} ({w / t:.2f}x) "
            f"sentences/s; fine-tuning transformers {ft_t:.0f}, ours {ft_o:.0f} tokens/s ({ft_o / ft_t:.2f}x)"
        )
    print("fine-tuning losses per step: " + "; ".join(f"{m} {results[m][0]['losses']}" for m in TRAIN))

    import torch

    runs = results["transformers"] + results["transformers-sorted"] + results["ours-E"]
    ref = runs[0]
    bad = [(r["method"], k) for r in runs for k, (a, b) in enumerate(zip(r["argmax"], ref["argmax"])) if a != b]
    logits = [torch.load(r["logits_file"], weights_only=True) for r in runs]  # tensors only
    diff = max(float((l - logits[0]).abs().max()) for l in logits)
    for r in runs:
        os.unlink(r["logits_file"])
    print(f"largest |logit difference| over all spans and runs (ours E vs transformers): {diff:.2e}")
    if bad or any(len(r["argmax"]) != len(ref["argmax"]) for r in runs):
        raise SystemExit(f"argmax differs on {len(bad)} spans, e.g. {bad[:5]}")
    counts = [ref["argmax"].count(i) for i in range(len(LABELS))]
    print(
        f"same argmax label on all {len(ref['argmax'])} spans in every run of ours E and transformers "
        f"(argmax counts {dict(zip(LABELS, counts))})"
    )
    if args.smoke:
        profile(out, BATCH)


if __name__ == "__main__":
    main()
