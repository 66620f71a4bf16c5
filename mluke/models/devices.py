"""Where and in which precision a model runs: ``device=`` and ``dtype=`` of every model path.

``device``: ``None`` keeps the model where it is (the CPU after :func:`mluke.load`); ``"auto"`` is the first
GPU when CUDA is available, else the CPU; anything else is a torch device name (``"cuda:1"``, ``"cpu"``).
``dtype``: ``None`` keeps the model's; ``"bf16"``/``"bfloat16"``, ``"fp16"``/``"float16"``, ``"fp32"``/
``"float32"`` or a ``torch.dtype``; or ``"int8"``: dynamic int8 quantization of the transformer encoder's linear
layers (weights stored in int8, each input quantized on the fly; torch's x86/fbgemm kernels), for inference on the
CPU only. Inputs follow the model (the encoders move them to its device), and scores come back as float32 CPU
tensors, so code around a model never needs to know where it runs.

int8 leaves the embeddings, the prediction heads and everything outside the encoder in float32. It uses
``torch.ao.quantization.quantize_dynamic``, which torch marks as deprecated in favour of the separate torchao
package; torchao's eager int8 path was measured slower on the CPU (docs/benchmarks/devices.md, "int8 on the CPU").
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

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
    "int8": torch.qint8,
    "qint8": torch.qint8,
}

#: what ``dtype="int8"`` cannot do, said where it is refused: the option's other values
INT8_ON_GPU = "use --device cpu (int8 runs on the CPU only), or --dtype bf16 / fp16 on a GPU"

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


def wants_int8(dtype: DType) -> bool:
    """Whether ``dtype`` asks for int8 quantization (``"int8"``, ``"qint8"`` or ``torch.qint8``)."""
    return (dtype if isinstance(dtype, torch.dtype) else DTYPES.get(str(dtype).lower())) is torch.qint8


def place(model: nn.Module, device: Device = None, dtype: DType = None) -> nn.Module:
    """Move ``model`` (in place) to ``device`` and cast it to ``dtype``; either may be ``None`` (unchanged).

    ``dtype="int8"`` quantizes the encoder's linear layers in place (:func:`quantize_int8`); ``device="auto"`` is
    then the CPU. A model quantized already stays as it is: moving it off the CPU or casting it is refused.
    """
    kind = resolve_dtype(dtype)
    if kind is torch.qint8:
        return quantize_int8(model, device)
    where = resolve_device(device)
    if is_int8(model) and (kind is not None or (where is not None and where.type != "cpu")):
        raise OptionError(
            f"device={device!r}, dtype={dtype!r}: the model is int8-quantized, which stays on the CPU in int8; "
            "load it again for another device or precision"
        )
    if where is not None or kind is not None:
        model.to(device=where, dtype=kind)
    return model


def quantize_int8(model: nn.Module, device: Device = None) -> nn.Module:
    """Quantize, in place, every ``nn.Linear`` of ``model``'s transformer encoders (each module named
    ``encoder`` with a ``layer`` list: mLUKE's, a word model's, a KnowBert model's) to dynamic int8: int8 weights
    (per tensor), activations quantized per batch on the fly. Float weights elsewhere are made float32.

    Raises:
        OptionError: a device other than the CPU (``"auto"`` and ``None`` mean the CPU; a model on a GPU is
            refused), or a model without such an encoder.
    """
    where = int8_device(device) or model_device(model)
    if where.type != "cpu":
        raise OptionError(f"dtype 'int8' on device '{where}': {INT8_ON_GPU}")
    model.to(where)
    if is_int8(model):
        return model
    encoders = [
        module
        for name, module in model.named_modules()
        if name.rpartition(".")[2] == "encoder" and isinstance(getattr(module, "layer", None), nn.ModuleList)
    ]
    if not encoders:
        raise OptionError(
            f"dtype 'int8': {type(model).__name__} has no transformer encoder (encoder.layer) to run in int8"
        )
    model.float()  # the int8 kernels quantize float32 weights and inputs (bf16 -> fp32 is exact)
    with warnings.catch_warnings():  # torch's notice that this API moves to torchao (module docs)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*", category=UserWarning)
        for encoder in encoders:
            torch.ao.quantization.quantize_dynamic(encoder, {nn.Linear}, dtype=torch.qint8, inplace=True)
    return model


def int8_device(device: Device) -> torch.device | None:
    """The device meant by ``device`` for an int8 model: ``"auto"`` is the CPU, ``None`` stays ``None``; a GPU
    is named as it is, even where CUDA is missing, so that the int8 refusal says what is wrong."""
    if device is None or isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cpu")
    try:
        return torch.device(device)
    except RuntimeError:
        return resolve_device(device)  # raises its error for a name that is no device


def is_int8(model: nn.Module) -> bool:
    """Whether ``model`` holds dynamically int8-quantized linear layers (``dtype="int8"``)."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    return any(isinstance(m, DynamicLinear) for m in model.modules())


def check_trainable(model: nn.Module, what: str) -> None:
    """Refuse to train an int8-quantized model (``dtype="int8"`` is for inference only); ``what``: the training
    (``"fine-tuning"``, ...), named in the error with what to do instead."""
    if is_int8(model):
        raise OptionError(
            f"{what}: the model is int8-quantized (dtype='int8'), which runs inference only; train from the "
            "float32 model (load it without dtype='int8') and quantize the trained model where it runs "
            "(dtype='int8' / --dtype int8 of link, probe, span vectors, transfer evaluation)"
        )


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of the model's parameters."""
    return next(model.parameters()).device


def to_device(inputs: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """``inputs`` with every tensor moved to ``device`` (other values as they are)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
