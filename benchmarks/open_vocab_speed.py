"""Open-vocabulary probing speed: prompts/s of the top-10 entities over the whole entity
vocabulary, ``ClozeScorer.entity_topk`` against transformers' ``LukeForMaskedLM`` forward
(full word logits at every position and the full (batch, 1.2M) entity logits), then
``log_softmax`` and ``topk``; same model at the mluke-base shape with random weights
(12 layers, hidden 768, 250,004 words, 1.2M x 256 entity table), same prompts, batch 32.

Prompts: "[X] was founded in [Y] ." with 64 subjects "Company 0" ... "Company 63", the
entity [MASK] over the ``<mask>`` at [Y]; the special entities are never an answer. Both
methods must give the same top-10 ids, in the same order, for every prompt (checked; the
script fails otherwise), and both must load the same entity decoder (weights and bias,
compared by hash). Timed: tokenizing, forward and top-k, after a warm-up on 4 prompts;
not the loading.

Two transformers baselines: ``careful`` (the like-for-like one: the encoder ``model.luke``,
then the entity head at the entity [MASK] only, as a careful user of ``LukeForMaskedLM``
writes it) and ``transformers`` (the forward as people run it by default, which also
computes the word head at every position). Medians of the interleaved rounds are reported.

Uses the random checkpoint of ``benchmarks/model_scoring.py`` (made here when missing: ~1 minute, 4.4 GB).
Each method runs in its own fresh process, interleaved, twice.

    python benchmarks/open_vocab_speed.py [--prompts 64] [--repeats 2] [--smoke]

``--smoke``: 36 prompts (two batches) on a 2-layer checkpoint in a temporary folder, one round.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from pathlib import Path

from common import base_shape_args, bench_threads, best_runs, make_checkpoint, peak_rss_mb, run_counted

TEMPLATE = "[X] was founded in [Y] ."
NAMES = {  # the methods, as the table names them
    "transformers": "transformers `LukeForMaskedLM` forward (full word + entity logits), `log_softmax`, "
    "`topk`, as run by default",
    "careful": "transformers encoder + entity head at the [MASK] only, `log_softmax`, `topk`",
    "ours": "`ClozeScorer.entity_topk` (entity rows of the last layer, chunked top-k)",
}
K, BATCH = 10, 32


def _digest(*tensors) -> str:
    """sha1 of the tensors' bytes (to compare weights across processes)."""
    h = hashlib.sha1()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().data)
    return h.hexdigest()


def measure(method: str, folder: Path, n_prompts: int) -> dict:
    import torch

    import mluke
    from kb.db.templates import parse_template

    torch.set_num_threads(bench_threads())
    template = parse_template(TEMPLATE)
    subjects = [f"Company {i}" for i in range(n_prompts)]
    info: dict = {}
    if method == "ours":
        from mluke.probing.scoring import ClozeScorer

        bundle = mluke.load(folder)
        tok, special = bundle.tokenizer, sorted(bundle.entity_vocab.special_ids.values())
        head = bundle.model.entity_predictions
        scorer = ClozeScorer(bundle.model, tok, batch_size=BATCH)

        def run(subs: list[str]):
            return scorer.entity_topk(template, subs, K, exclude=special)
    else:  # transformers: full forward (word + entity logits), or (careful) the encoder and the entity head only
        from transformers import LukeForMaskedLM

        from mluke.models.tokenizer import MlukeTokenizer

        tok = MlukeTokenizer.from_pretrained(folder)  # what mluke.load gives as the tokenizer, without our model
        special = sorted(tok.entity_vocab.special_ids.values())
        ref = LukeForMaskedLM.from_pretrained(folder).eval()
        head, emb = ref.entity_predictions, ref.luke.entity_embeddings.entity_embeddings.weight
        info["decoder_shares_embeddings"] = head.decoder.weight.data_ptr() == emb.data_ptr()
        info["decoder_equals_embeddings"] = bool(torch.equal(head.decoder.weight, emb))
        if not info["decoder_equals_embeddings"]:  # tie by hand, as the checkpoint means it
            head.decoder.weight = emb
        drop = torch.tensor(special)

        @torch.inference_mode()
        def run(subs: list[str]):
            logps, ids = [], []
            for start in range(0, len(subs), BATCH):
                texts, spans = [], []
                for s in subs[start : start + BATCH]:
                    text, _, y = template.fill_spans(s, "<mask>")
                    texts.append(text)
                    spans.append([y])
                if method == "careful":
                    hidden = ref.luke(**tok(texts, entity_spans=spans)).entity_last_hidden_state[:, 0]
                    logits = ref.entity_predictions(hidden)
                else:
                    logits = ref(**tok(texts, entity_spans=spans)).entity_logits[:, 0]
                logits[:, drop] = float("-inf")
                top = torch.log_softmax(logits, -1).topk(K, dim=-1)
                logps.append(top.values)
                ids.append(top.indices)
            return torch.cat(logps), torch.cat(ids)

    info["entity_head_sha1"] = _digest(head.decoder.weight, head.bias)
    run(subjects[:4])  # warm-up
    t = time.perf_counter()
    logp, ids = run(subjects)
    seconds = time.perf_counter() - t
    assert ids.shape == (n_prompts, K), ids.shape
    top = ids.tolist()
    return {
        "method": method,
        "prompts_per_s": n_prompts / seconds,
        "seconds": seconds,
        "peak_rss_mb": peak_rss_mb(),
        **info,
        "logp_sum": float(logp.double().sum()),
        "top_sha1": hashlib.sha1(json.dumps(top).encode()).hexdigest(),
        "top": top,
    }


def main() -> None:
    args, folder = base_shape_args(__doc__, __file__, measure, "--prompts", 64, smoke=36)
    if not (folder / "entity_vocab.sqlite").exists():
        make_checkpoint(folder)
    methods = ["careful", "ours", "transformers"]
    results = run_counted(__file__, methods, args, "--prompts")
    best = best_runs(results, "prompts_per_s")
    median = {m: statistics.median(r["prompts_per_s"] for r in results[m]) for m in methods}
    print("\n| method | prompts/s (median) | x careful | x default | peak RSS (MB) |\n|---|---:|---:|---:|---:|")
    for m in methods:
        r = best[m]
        print(
            f"| {NAMES[m]} | {median[m]:.2f} | {median[m] / median['careful']:.2f}x | "
            f"{median[m] / median['transformers']:.2f}x | {r['peak_rss_mb']:.0f} |"
        )
    for i in range(args.repeats):
        c, t, o = (results[m][i]["prompts_per_s"] for m in ("careful", "transformers", "ours"))
        print(
            f"round {i + 1}: careful {c:.2f}, transformers {t:.2f}, ours {o:.2f} prompts/s "
            f"({o / c:.2f}x careful, {o / t:.2f}x default)"
        )
    runs = [r for m in methods for r in results[m]]
    ref = results["transformers"][0]
    print(
        f"transformers' entity decoder shares the entity embeddings: {ref['decoder_shares_embeddings']}, "
        f"equals them: {ref['decoder_equals_embeddings']}"
    )
    print(
        "sum of the top-10 log-probabilities over all prompts: "
        + ", ".join(f"{m} {r['logp_sum']:.4f}" for m in methods for r in results[m][:1])
    )
    heads = {r["entity_head_sha1"] for r in runs}
    if len(heads) != 1:
        raise SystemExit(f"the two methods loaded different entity decoders: {heads}")
    same = [all(r["top"][p] == ref["top"][p] for r in runs) for p in range(args.prompts)]
    if not all(same):
        bad = [p for p, ok in enumerate(same) if not ok]
        raise SystemExit(
            f"top-10 ids differ for {len(bad)} of {args.prompts} prompts, e.g. prompt {bad[0]}: "
            + "; ".join(f"{r['method']} {r['top'][bad[0]]}" for r in runs)
        )
    print(f"same top-10 ids, in the same order, for all {args.prompts} prompts in every run")


if __name__ == "__main__":
    main()
