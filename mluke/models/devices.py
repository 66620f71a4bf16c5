"""Where and in which precision a model runs: ``device=`` and ``dtype=`` of every model path.

``device``: ``None`` keeps the model where it is (the CPU after :func:`mluke.load`); ``"auto"`` is the first
GPU when CUDA is available, else the CPU; anything else is a torch device name (``"cuda:1"``, ``"cpu"``).
``dtype``: ``None`` keeps the model's; ``"bf16"``/``"bfloat16"``, ``"fp16"``/``"float16"``, ``"fp32"``/
``"float32"`` or a ``torch.dtype``. Inputs follow the model (the encoders move them to its device), and
scores come back as float32 CPU tensors, so code around a model never needs to know where it runs.
"""

from __future__ import annotations

from typing import Any

import torch

from kb.errors import OptionError

DTYPES = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
    "float": torch.float32,
}

Device = str | torch.device | None
DType = str | torch.dtype | None


def resolve_device(device: Device) -> torch.device | None:
    """The torch device meant by ``device`` (``None`` stays ``None``: wherever the model is)."""
    if device is None or isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        found = torch.device(device)
    except RuntimeError:
        raise OptionError(f"device {device!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if found.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"device {device!r}: CUDA is not available here (use 'cpu' or 'auto')")
    return found


def resolve_dtype(dtype: DType) -> torch.dtype | None:
    """The torch dtype meant by ``dtype`` (``None`` stays ``None``: the model's own)."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    found = DTYPES.get(str(dtype).lower())
    if found is None:
        raise OptionError(f"dtype {dtype!r}: expected one of {', '.join(sorted(DTYPES))}")
    return found


def place(model: torch.nn.Module, device: Device = None, dtype: DType = None) -> torch.nn.Module:
    """Move ``model`` (in place) to ``device`` and cast it to ``dtype``; either may be ``None`` (unchanged)."""
    where, kind = resolve_device(device), resolve_dtype(dtype)
    if where is not None or kind is not None:
        model.to(device=where, dtype=kind)
    return model


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of the model's parameters."""
    return next(model.parameters()).device


def to_device(inputs: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """``inputs`` with every tensor moved to ``device`` (other values as they are)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
