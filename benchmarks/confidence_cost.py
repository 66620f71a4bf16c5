"""Cost of the linker's confidence at the mluke-base shape: the candidates' MEP log-probabilities over the
whole entity vocabulary (the confidence's ``model_lift`` feature, issue 28) against the unnormalised
candidate logits that ranking alone needs (the linker before issue 28).

    python benchmarks/confidence_cost.py [MODEL_DIR]

MODEL_DIR: a checkpoint with a 1.2M-entity table, e.g. the random mluke-base-shaped one that
``benchmarks/model_scoring.py`` writes (default: benchmarks/work/mluke-base-random).
"""

import sys
import time

import torch

import mluke

torch.manual_seed(0)
torch.set_num_threads(2)
folder = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/work/mluke-base-random"
m = mluke.load(folder)
model = m.model if hasattr(m, "model") else m[0]
n, c = 64, 5
states = torch.randn(n, model.config.hidden_size)
cand = torch.randint(4, model.config.entity_vocab_size, (n, c))
with torch.inference_mode():
    for norm in (False, True, False, True):  # interleaved; the first call of each warms up
        t = time.perf_counter()
        model.entity_scores(states, cand, normalize=norm)
        dt = time.perf_counter() - t
        print(
            f"normalize={norm}: {dt * 1000:.1f} ms for {n} mentions ({dt / n * 1000:.2f} ms/mention), "
            f"entity vocab {model.config.entity_vocab_size:,}"
        )
