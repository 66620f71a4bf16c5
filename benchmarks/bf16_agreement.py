"""bf16 against fp32 on the demo model: the demo's held-out evaluation (``probes.demo_eval.evaluate_demo``:
every held-out (relation, language, subject) and up to 20 training subjects per cell, three prompt modes)
run with the model in fp32 and cast to bfloat16, one after the other in one process, 2 threads.

Reports: the share of probed (cell, subject, mode) items whose top-1 answer is the same, P@1 on the held-out
pairs per mode in both precisions, and the seconds each pass took (the whole evaluation: tokenizing, the
encoder, candidate scoring). Writes ``benchmarks/results/bf16_agreement.json``.

    python benchmarks/bf16_agreement.py [--smoke]

``--smoke``: the same on the tiny demo model, 2 training subjects per cell, written into a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from common import add_smoke, bench_threads, demo_folder, smoke_folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_smoke(ap)
    args = ap.parse_args()
    import torch

    from probes.demo_eval import evaluate_demo

    torch.set_num_threads(bench_threads())
    folder = demo_folder(args.smoke, progress=False)
    per_cell = 2 if args.smoke else 20  # training subjects probed per (relation, language)
    runs = {}
    for name, dtype in (("fp32", None), ("bf16", "bf16"), ("fp32 again", None)):
        outcomes: list = []
        started = time.perf_counter()
        summary = evaluate_demo(folder, progress=False, dtype=dtype, outcomes=outcomes, max_train_per_cell=per_cell)
        runs[name] = {"seconds": time.perf_counter() - started, "outcomes": outcomes, "summary": summary}
        print(name, round(runs[name]["seconds"], 1), "s", flush=True)

    def key(o):
        return (o.relation, o.lang, o.subject, o.mode)

    full = {key(o): o for o in runs["fp32"]["outcomes"]}
    half = {key(o): o for o in runs["bf16"]["outcomes"]}
    shared = sorted(set(full) & set(half))
    same = sum(full[k].prediction == half[k].prediction for k in shared) / len(shared)
    modes = sorted({k[3] for k in shared})
    p_at_1 = {}
    for mode in modes:
        held = [k for k in shared if k[3] == mode and full[k].split == "held-out"]
        p_at_1[mode] = {
            "fp32": 100 * sum(full[k].correct for k in held) / len(held),
            "bf16": 100 * sum(half[k].correct for k in held) / len(held),
            "items": len(held),
        }
    out = {
        "machine": f"{platform.machine()}, {bench_threads()} threads",
        "torch": torch.__version__,
        "items": len(shared),
        "same_top1": same,
        "same_top1_by_mode": {
            m: sum(full[k].prediction == half[k].prediction for k in shared if k[3] == m)
            / sum(1 for k in shared if k[3] == m)
            for m in modes
        },
        "heldout_p_at_1": p_at_1,
        "seconds": {n: r["seconds"] for n, r in runs.items()},
    }
    path = (smoke_folder() if args.smoke else Path(__file__).parent / "results") / "bf16_agreement.json"
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
