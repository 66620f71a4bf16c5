"""Cost of the linker's confidence at the mluke-base shape (issue 28): per batch of mentions, the
candidates' unnormalised logits (ranking alone), their log-probabilities over the whole entity vocabulary
(the ``model_lift`` feature: one pass over the entity table), and the same pass that also keeps the best
entity and leaves out excluded ids (the ``vocab_gap`` feature and the missing-entity simulation).

    python benchmarks/confidence_cost.py [MODEL_DIR] [--repeats N]

MODEL_DIR: a checkpoint with a 1.2M-entity table (e.g. the random mluke-base-shaped one that
``benchmarks/model_scoring.py`` writes); without it, a random table of that shape (1,200,001 x 256,
float32) and a random MEP transform output stand in (the same work for these three computations).
Interleaved (ranking, normaliser, normaliser + best, ...); medians; outputs checked equal.
``--smoke``: one round on the smallest random checkpoint (made in a temporary folder unless MODEL_DIR is given).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from common import add_smoke, bench_threads, make_checkpoint, smoke_folder

from mluke.models.masked_lm import candidate_scores_and_best, chunked_logsumexp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=bench_threads())
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:  # one round on the smallest random checkpoint (the MODEL_DIR path; the other is torch.randn)
        args.repeats = 1
        if args.model is None:
            args.model = smoke_folder() / "checkpoint"
            make_checkpoint(args.model, smoke=True)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    n, c = 64, 5
    if args.model:
        import mluke

        bundle = mluke.load(args.model)
        model = bundle.model if hasattr(bundle, "model") else bundle[0]
        table, bias = model.entity_predictions.decoder.weight.detach(), model.entity_predictions.bias.detach()
        with torch.inference_mode():
            feats = model.entity_features(torch.randn(n, model.config.hidden_size))
    else:
        table, bias = torch.randn(1_200_001, 256) * 0.05, torch.randn(1_200_001) * 0.01
        feats = torch.randn(n, 256)
    cand = torch.randint(4, table.shape[0], (n, c))
    exclude = torch.randint(4, table.shape[0], (n, 1))

    def ranking() -> torch.Tensor:
        return torch.einsum("nd,ncd->nc", feats, table[cand]) + bias[cand]

    def normalised() -> torch.Tensor:
        return ranking() - chunked_logsumexp(feats, table, bias).unsqueeze(-1)

    def with_best() -> tuple[torch.Tensor, torch.Tensor]:
        return candidate_scores_and_best(feats, table, bias, cand, None, 8192)

    def with_best_excluding() -> tuple[torch.Tensor, torch.Tensor]:
        return candidate_scores_and_best(feats, table, bias, cand, exclude, 8192)

    runs = {
        "candidate logits (ranking)": ranking,
        "+ normaliser": normalised,
        "+ normaliser and best": with_best,
        "+ normaliser and best, 1 id excluded": with_best_excluding,
    }
    with torch.inference_mode():
        a, (b, _) = normalised(), with_best()
        print(f"normalised scores equal: max |difference| {float((a - b).abs().max()):.2e}")
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.repeats + 1):  # the first round warms up
            for name, run in runs.items():
                t = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t)
    print(f"{n} mentions x {c} candidates, entity table {table.shape[0]:,} x {table.shape[1]}, {args.threads} threads")
    print("| computation | median ms per batch | ms per mention |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        med = statistics.median(ts[1:])
        print(f"| {name} | {med * 1000:.1f} | {med / n * 1000:.2f} |")


if __name__ == "__main__":
    main()
