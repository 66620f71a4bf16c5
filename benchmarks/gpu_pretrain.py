"""A short pretraining run on the GPU under torchrun (run by ``benchmarks/gpu_check.sh``): the ``tiny`` demo
preset trained from scratch with a process group started (NCCL on a GPU: torchrun starts one whatever the number
of processes, see ``mluke.pretraining.schedule.dist_info``), then the backend, the device, the steps, tokens/s and
the losses of its log, written as JSON.

    torchrun --standalone --nproc_per_node 1 benchmarks/gpu_pretrain.py --out pretrain.json
    python benchmarks/gpu_pretrain.py --smoke      # one process on this machine's device, no torchrun
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.distributed as dist
from common import add_smoke, smoke_folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "gpu_pretrain.json")
    ap.add_argument("--work", type=Path, default=Path("/tmp/mluke-gpu-pretrain"))
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.work = smoke_folder()
        args.out = args.work / "gpu_pretrain.json"
    from mluke.demo.model import train_demo

    t = time.perf_counter()
    folder = train_demo(args.work / "tiny", preset="tiny", progress=False, overwrite=True)
    seconds = time.perf_counter() - t
    log = [json.loads(line) for line in (folder / "train_log.jsonl").read_text().splitlines() if line.strip()]
    result = {
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "world_size": dist.get_world_size() if dist.is_initialized() else 1,
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "seconds_with_kb_and_corpus": seconds,
        "steps": log[-1]["step"] if log else 0,
        "tokens_per_s_median": sorted(r["tokens_per_s"] for r in log)[len(log) // 2] if log else None,
        "first_loss": log[0]["loss"] if log else None,
        "last_loss": log[-1]["loss"] if log else None,
    }
    if not dist.is_initialized() or dist.get_rank() == 0:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
        print(json.dumps(result, indent=1))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
