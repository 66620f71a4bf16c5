"""Cloze scoring at the real mluke-base shape (random weights): our candidate-restricted
entity scoring vs transformers' ``LukeForMaskedLM``, plus the encoder-only ceiling and the
time of ``mluke.load``.

Two transformers baselines: the like-for-like one (``careful``: the encoder ``model.luke``,
then the entity head at the entity [MASK] only, as a careful user of ``LukeForMaskedLM``
writes it; ``careful-ranking``: the encoder, the head's transform and the candidates' rows
only) and the one people run by default (``transformers``: the forward, which also computes
the 250,004-way word head at every position). Each method's scores are saved and compared:
``careful`` must equal ``ours`` and ``careful-ranking`` must equal ``ours-ranking``.

Shape: 12 layers, hidden 768, 250,004 words, 1,200,001 entities of 256 dims.
Prompts: 16 pieces with one entity [MASK] over the <mask> piece, 100 candidate
entities each, batch 32. Every method runs in its own fresh process (interleaved,
twice) so its time and peak RSS are its own. ``--bf16`` adds each method with the model cast to
bfloat16 (the transformers class too), to see the gain of the code and of the dtype apart.

    python benchmarks/model_scoring.py [--prompts 256] [--work benchmarks/work] [--bf16] [--smoke]

``--smoke``: 40 prompts on a 2-layer checkpoint of 2,001 entities in a temporary folder, one round.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from common import (
    base_shape_args,
    bench_threads,
    best_runs,
    checkpoint_entities,
    make_checkpoint,
    peak_rss_mb,
    run_counted,
)

SEQ, N_CAND, BATCH = 16, 100, 32


def _batches(n_prompts: int, mask_entity_id: int, n_entities: int):
    import torch

    g = torch.Generator().manual_seed(1)
    for start in range(0, n_prompts, BATCH):
        b = min(BATCH, n_prompts - start)
        ids = torch.randint(5, 250000, (b, SEQ), generator=g)
        ids[:, 0], ids[:, -1], ids[:, 8] = 0, 2, 250001
        pos = torch.full((b, 1, 30), -1)
        pos[:, 0, 0] = 8
        yield (
            {
                "input_ids": ids,
                "attention_mask": torch.ones_like(ids),
                "entity_ids": torch.full((b, 1), mask_entity_id),
                "entity_attention_mask": torch.ones(b, 1, dtype=torch.long),
                "entity_position_ids": pos,
            },
            torch.randint(4, n_entities, (b, N_CAND), generator=g),
        )


def measure(method: str, folder: Path, n_prompts: int) -> dict:
    import torch

    torch.set_num_threads(bench_threads())
    bf16 = method.endswith("-bf16")
    name, method = method, method.removesuffix("-bf16")
    t0 = time.perf_counter()
    if method.startswith(("transformers", "careful")):
        from transformers import LukeForMaskedLM

        model = LukeForMaskedLM.from_pretrained(folder).eval()
        mask_id = 2
    else:
        import mluke

        model, _tok, vocab = mluke.load(folder)
        mask_id = vocab.mask_id
    if bf16:
        model.to(torch.bfloat16)
    load_s = time.perf_counter() - t0
    batches = list(_batches(n_prompts, mask_id, checkpoint_entities(folder)))
    checksum = 0.0
    with torch.inference_mode():
        model(**batches[0][0]) if method == "transformers" else (
            model.luke(**batches[0][0]) if method.startswith("careful") else model.encode(**batches[0][0])
        )  # warm-up
        t = time.perf_counter()
        kept = []
        for inputs, cands in batches:
            if method == "transformers":
                out = model(**inputs)
                scores = torch.log_softmax(out.entity_logits[:, 0].float(), -1).gather(1, cands)
                _ = out.logits  # full word logits computed, as the forward does
            elif method == "careful":  # encoder, then the entity head at the [MASK] row only
                h = model.luke(**inputs).entity_last_hidden_state[:, 0]
                scores = torch.log_softmax(model.entity_predictions(h).float(), -1).gather(1, cands)
            elif method == "careful-ranking":  # encoder, head transform, the candidates' rows only
                h = model.luke(**inputs).entity_last_hidden_state[:, 0]
                head = model.entity_predictions
                m = head.transform(h)
                scores = (head.decoder.weight[cands] @ m.unsqueeze(-1)).squeeze(-1).float() + head.bias[cands].float()
            elif method == "encoder":
                _, ents = model.encode(**inputs)
                scores = ents[:, 0, :1]
            else:  # what mluke.probe runs: the last layer for the entity rows only
                ents = model.encode_entities(**inputs)
                scores = model.entity_scores(ents[:, 0], cands, normalize=(method == "ours"))
            checksum += float(scores.sum())
            kept.append(scores.float())
        elapsed = time.perf_counter() - t
    if method != "encoder":
        torch.save(torch.cat(kept), folder.parent / f"scores-{name}.pt")
    return {
        "method": name,
        "load_s": load_s,
        "prompts_per_s": n_prompts / elapsed,
        "seconds": elapsed,
        "peak_rss_mb": peak_rss_mb(),
        "checksum": checksum,
    }


def main() -> None:
    args, folder = base_shape_args(__doc__, __file__, measure, "--prompts", 256, smoke=40)
    if not (folder / "entity_vocab.sqlite").exists():
        t = time.perf_counter()
        make_checkpoint(folder)
        print(f"made {folder} in {time.perf_counter() - t:.0f} s", flush=True)
    methods = ["careful", "ours", "careful-ranking", "ours-ranking", "transformers", "encoder"]
    if args.bf16:
        methods += [f"{m}-bf16" for m in methods]
    if args.only:
        methods = [m for m in methods if m in args.only.split(",")]
    results = run_counted(__file__, methods, args, "--prompts")
    best = best_runs(results, "prompts_per_s")
    print("\n| method | prompts/s (median) | rounds | peak RSS (MB) | load (s) |")
    print("|---|---:|---|---:|---:|")
    names = {
        "transformers": "transformers `LukeForMaskedLM` forward (full word + entity logits), as run by default",
        "careful": "transformers encoder + entity head at the [MASK] only (log-probs)",
        "careful-ranking": "transformers encoder + head transform + candidate rows only (ranking)",
        "ours": "mluke `entity_scores` (log-probs, full normaliser)",
        "ours-ranking": "mluke `entity_scores(normalize=False)` (ranking only)",
        "encoder": "encoder alone (ceiling)",
    }
    names |= {f"{m}-bf16": f"{names[m]}, bf16" for m in list(names)}
    median = {m: statistics.median(r["prompts_per_s"] for r in results[m]) for m in methods}
    for m in methods:
        r = best[m]
        rounds = " / ".join(f"{x['prompts_per_s']:.1f}" for x in results[m])
        print(f"| {names[m]} | {median[m]:.1f} | {rounds} | {r['peak_rss_mb']:.0f} | {r['load_s']:.1f} |")
    print()
    import torch

    for suffix in ("", "-bf16"):
        for ours, base in (("ours", "careful"), ("ours-ranking", "careful-ranking"), ("ours", "transformers")):
            a, b = ours + suffix, base + suffix
            if a not in median or b not in median:
                continue
            sa, sb = (torch.load(folder.parent / f"scores-{x}.pt", weights_only=True) for x in (a, b))
            same_top1 = float((sa.argmax(1) == sb.argmax(1)).float().mean()) * 100
            same_order = (
                float((sa.argsort(1, descending=True) == sb.argsort(1, descending=True)).all(1).float().mean()) * 100
            )
            ratios = [x["prompts_per_s"] / y["prompts_per_s"] for x, y in zip(results[a], results[b])]
            print(
                f"{a} vs {b}: median ratio {median[a] / median[b]:.2f}x (rounds "
                f"{', '.join(f'{x:.2f}' for x in ratios)}); same top-1 {same_top1:.1f}%, same full candidate "
                f"order {same_order:.1f}%, max |score diff| {float((sa - sb).abs().max()):.2e}"
            )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
