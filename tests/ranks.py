"""Pretending to be rank 0 of two processes inside one test process, to see the collectives a trainer's step
runs (which device their tensors are on, how many there are) without starting a process group."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.distributed as dist


class Reduced(Exception):
    """Raised by the patched ``all_reduce``: the step stops at its first collective."""


def first_collective_device(trainer: Any, monkeypatch: pytest.MonkeyPatch) -> list[torch.device]:
    """The devices of the tensors given to the collectives of a step, which stops at the first, as rank 0 of 2
    on the "meta" device (it stands in for a GPU: NCCL refuses CPU tensors, and a tensor left on the CPU
    shows). ``all_reduce`` stays patched (recording, then raising :class:`Reduced`) until the test ends."""
    seen: list[torch.device] = []

    def all_reduce(tensor: torch.Tensor, *args: object, **kwargs: object) -> None:
        seen.append(tensor.device)
        raise Reduced

    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    trainer._enter_stage(0, 0)  # before pretending to have two processes (no DDP wrapper then)
    trainer.world, trainer.distributed, trainer.device = 2, True, torch.device("meta")
    with pytest.raises(Reduced):
        trainer.train_step()
    return seen


def step_collectives(trainer: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[list[torch.device], Any]:
    """After :func:`first_collective_device`: one whole step of rank 0 of 2 on the CPU, its collectives
    recorded (and left as they are: each rank's own values), and what the step returns."""
    calls: list[torch.device] = []
    monkeypatch.setattr(dist, "all_reduce", lambda tensor, *a, **k: calls.append(tensor.device))
    trainer.device = torch.device("cpu")
    return calls, trainer.train_step()
