"""Entity-typing inference speed, like for like: our typing head (``mluke.finetuning``, task "typing", entity
features) against transformers' ``LukeForEntityClassification`` with the same weights, inputs and batches.

Models (random weights; the figures are about speed, not quality): the mluke-base shape (hidden 768, 12 layers,
12 heads, feed-forward 3072, entity embeddings of 256) and the demo model's tiny shape (hidden 128, 2 layers,
4 heads, feed-forward 512, entity embeddings of 64), both with the demo tokenizer's word vocabulary (the
embedding table's size only changes a lookup) and the typing entity table ([PAD], [MASK]). transformers'
model is built and initialised first; ours (``TransferModel(LukeModel(config), "typing", "entity", labels)``)
loads its state dict (pooler left out: ours has none), as the parity test ``tests/mluke/head_parity.py`` does.

Inputs: ``--mentions`` mentions of the miniature typing test sets (``probes.transfer.miniature.typing``; the
same number from each of the 24 languages), made into rows by ``typing_rows`` (one entity [MASK] over the
mention) and batched by ``--batch-size`` in the order ``predict_types`` uses (longest first), collated once; both
models get the same tensors (transformers: ``input_ids``, ``attention_mask``, ``entity_ids``,
``entity_position_ids``, ``entity_attention_mask``). Timed: the forward pass of every batch and the 0.5 sigmoid
threshold, under ``torch.inference_mode``, in eval mode, float32, ``torch.set_num_threads`` threads (2, or
``$BENCH_THREADS``), in one process. Before timing, the logits of every batch are compared (largest absolute
difference reported; the script fails above ``--tolerance`` or on any different prediction). Then one warm-up
pass each, and ``--repeats`` rounds of (ours, transformers) passes, the order alternating per round; medians, the
ratio of the medians transformers / ours, and the median of the per-round ratios (each round's two passes ran
back to back, under about the same load).

    python benchmarks/typing_speed.py [--mentions 48] [--batch-size 16] [--repeats 9] [--out FILE] [--smoke]

``--smoke``: 24 mentions in batches of 8, the tiny shape only, one round, into a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from common import add_smoke, bench_threads, demo_folder, smoke_folder, xlmr_shape

HERE = Path(__file__).resolve().parent
SHAPES = {
    "base": {**xlmr_shape(768, 12, 12, 3072), "entity_emb_size": 256},
    "tiny": {**xlmr_shape(128, 2, 4, 512), "entity_emb_size": 64},
}


def inputs(n: int, batch_size: int, smoke: bool = False) -> tuple[int, list[dict], int]:
    """(word vocabulary size, collated batches, pieces) of ``n`` miniature typing test mentions (the same number
    from each language), tokenized by the demo model's tokenizer (the tiny demo's in a smoke run)."""
    import kb
    import mluke
    from mluke.finetuning.inputs import batches, collate, typing_rows
    from probes.transfer.miniature.typing import make_typing

    bundle = mluke.load(demo_folder(smoke))
    tok = bundle.tokenizer
    per_language = -(-n // len(kb.MLUKE_LANGUAGES))
    made = make_typing(kb.default_db(), train_size=0, dev_size=0, test_size=per_language)
    examples = [e for lang in kb.MLUKE_LANGUAGES for e in made[lang]["test"]][:n]
    rows = typing_rows(tok, [e.text for e in examples], [e.span for e in examples])
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))  # as predict_types batches them
    collated = [collate(part, pad_id=tok.pad_id) for part in batches(rows, batch_size, order=order)]
    return bundle.model.config.vocab_size, collated, sum(len(r.ids) for r in rows)


def models(shape: str, vocab_size: int, labels: int) -> tuple[object, object]:
    """(ours, transformers') typing models of ``shape`` with the same random weights, in eval mode."""
    import torch
    from transformers import LukeConfig, LukeForEntityClassification, LukeModel

    from mluke.finetuning.models import TransferModel

    config = LukeConfig(vocab_size=vocab_size, entity_vocab_size=2, num_labels=labels, **SHAPES[shape])
    torch.manual_seed(0)
    ref = LukeForEntityClassification(config).eval()
    ours = TransferModel(
        LukeModel(config, add_pooling_layer=False), "typing", "entity", [f"t{i}" for i in range(labels)]
    )
    ours.load_state_dict({k: v for k, v in ref.state_dict().items() if not k.startswith("luke.pooler.")}, strict=True)
    return ours.eval(), ref


REF_KEYS = ("input_ids", "attention_mask", "entity_ids", "entity_position_ids", "entity_attention_mask")


def passes(ours, ref, batches: list[dict]) -> dict:
    """Logits of every batch, ours and transformers'."""
    import torch

    with torch.inference_mode():
        return {
            "ours": [ours(b) for b in batches],
            "transformers": [ref(**{k: b[k] for k in REF_KEYS}).logits for b in batches],
        }


def timed(method: str, ours, ref, batches: list[dict]) -> float:
    """Seconds of one pass over ``batches`` (forward and 0.5 threshold)."""
    import torch

    started = time.perf_counter()
    with torch.inference_mode():
        for b in batches:
            logits = ours(b) if method == "ours" else ref(**{k: b[k] for k in REF_KEYS}).logits
            _ = torch.sigmoid(logits) > 0.5
    return time.perf_counter() - started


def measure(shape: str, args: argparse.Namespace, vocab_size: int, batches: list[dict], pieces: int) -> dict:
    """Equality check, then interleaved timing, for one shape."""
    import torch

    ours, ref = models(shape, vocab_size, 6)
    out = passes(ours, ref, batches)
    diff = max(float((a - b).abs().max()) for a, b in zip(out["ours"], out["transformers"]))
    same = all(torch.equal(a > 0, b > 0) for a, b in zip(out["ours"], out["transformers"]))
    if diff > args.tolerance or not same:
        raise SystemExit(f"{shape}: logits differ by {diff:.3g} (same predictions: {same}); not timing")
    seconds: dict[str, list[float]] = {"ours": [], "transformers": []}
    for method in seconds:  # warm-up
        timed(method, ours, ref, batches)
    for r in range(args.repeats):
        for method in ("ours", "transformers") if r % 2 == 0 else ("transformers", "ours"):
            seconds[method].append(timed(method, ours, ref, batches))
    mentions = sum(int(b["input_ids"].shape[0]) for b in batches)
    median = {m: statistics.median(v) for m, v in seconds.items()}
    paired = [t / o for t, o in zip(seconds["transformers"], seconds["ours"])]  # the same round, the same load
    return {
        "shape": shape,
        "config": SHAPES[shape],
        "max_abs_diff": diff,
        "mentions": mentions,
        "pieces": pieces,
        "batches": len(batches),
        "seconds": seconds,
        "median_s": median,
        "mentions_per_s": {m: mentions / s for m, s in median.items()},
        "ratio_transformers_over_ours": median["transformers"] / median["ours"],
        "paired_ratio_median": statistics.median(paired),
        "load_average_after": os.getloadavg()[0],
    }


def table(results: list[dict]) -> str:
    lines = [
        (
            "| shape | mentions (batches) | max abs logit diff | ours median s | transformers median s "
            "| ours mentions/s | transformers mentions/s | transformers / ours (medians) | per-round ratio, median |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        m, s = r["median_s"], r["mentions_per_s"]
        lines.append(
            f"| {r['shape']} | {r['mentions']} ({r['batches']}) | {r['max_abs_diff']:.2e} | {m['ours']:.3f} "
            f"| {m['transformers']:.3f} | {s['ours']:.1f} | {s['transformers']:.1f} "
            f"| {r['ratio_transformers_over_ours']:.2f}x | {r['paired_ratio_median']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mentions", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--shapes", nargs="+", default=["base", "tiny"], choices=sorted(SHAPES))
    ap.add_argument("--tolerance", type=float, default=1e-4, help="largest logit difference allowed")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "typing_speed.json")
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.mentions, args.batch_size, args.repeats, args.shapes = 24, 8, 1, ["tiny"]
        args.out = smoke_folder() / "typing_speed.json"
    threads = bench_threads()
    torch.set_num_threads(threads)
    load = os.getloadavg()[0]
    vocab_size, batches, pieces = inputs(args.mentions, args.batch_size, args.smoke)
    results = []
    for shape in args.shapes:
        results.append(measure(shape, args, vocab_size, batches, pieces))
        print(json.dumps({k: v for k, v in results[-1].items() if k != "seconds"}), flush=True)
    from kb.files import write_json

    write_json(
        {
            "load_average_before": load,
            "threads": threads,
            "torch": torch.__version__,
            "settings": vars(args) | {"out": str(args.out)},
            "runs": results,
        },
        args.out,
        overwrite=True,
    )
    print(f"\n{threads} threads, float32\n{table(results)}")


if __name__ == "__main__":
    main()
