"""The schedule of a pretraining run: which stage a step is in, the learning rate within it (linear warm-up,
then linear decay, reset per stage), the stage's AdamW optimizer, and this process's rank and device."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from kb.errors import MlukeError
from mluke.pretraining.config import StageConfig, TrainConfig
from mluke.pretraining.init import is_new_parameter


def dist_info(device: str = "auto") -> tuple[int, int, torch.device]:
    """(rank, world size, this process's device); starts the process group under torchrun, whatever the world
    size (so one process under torchrun runs NCCL and DistributedDataParallel as a multi-GPU run does).

    ``device``: ``"auto"`` (GPU ``LOCAL_RANK`` when CUDA is available, else the CPU), ``"cpu"`` or ``"cuda"``.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() if device == "auto" else device.startswith("cuda")
    if use_cuda and not torch.cuda.is_available():
        raise MlukeError(f"run.device = {device!r}, but CUDA is not available here")
    where = torch.device("cuda", local) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(where)
    if (world > 1 or under_torchrun()) and not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    return rank, world, where


def under_torchrun() -> bool:
    """Whether this process was started by torchrun (torch.distributed.elastic sets ``TORCHELASTIC_RUN_ID``)."""
    return "TORCHELASTIC_RUN_ID" in os.environ


def stage_at(stages: list[StageConfig], step: int) -> tuple[int, StageConfig, int]:
    """(stage index, stage, step within the stage) of global step ``step``."""
    start = 0
    for i, stage in enumerate(stages):
        if step < start + stage.steps:
            return i, stage, step - start
        start += stage.steps
    return len(stages) - 1, stages[-1], stages[-1].steps


def lr_factor(stage: StageConfig, step_in_stage: int) -> float:
    """Linear warm-up to the peak, then linear decay to 0 at the end of the stage."""
    if stage.warmup_steps and step_in_stage < stage.warmup_steps:
        return (step_in_stage + 1) / stage.warmup_steps
    rest = max(1, stage.steps - stage.warmup_steps)
    return max(0.0, (stage.steps - step_in_stage) / rest)


def make_optimizer(model: torch.nn.Module, config: TrainConfig, stage: StageConfig) -> torch.optim.AdamW:
    """AdamW over the stage's trainable parameters; no weight decay on biases and LayerNorm weights."""
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        train = (stage.train == "all" or is_new_parameter(name)) and not name.startswith("luke.pooler.")
        p.requires_grad_(train)
        if not train:
            continue
        (no_decay if name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    o = config.optim
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": o.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=stage.learning_rate,
        betas=(o.betas[0], o.betas[1]),
        eps=o.eps,
    )
