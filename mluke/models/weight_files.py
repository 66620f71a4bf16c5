"""Reading and writing safetensors weight files without a second copy of what they hold.

``safetensors`` (0.4 and later) maps a file and returns tensors that are views of the mapping: nothing is read
until a tensor is used, and the pages used count in the process's resident memory for as long as the mapping
lives. A checkpoint that stores tied weights twice (mLUKE's word and entity decoders written out in full, 1 GB
and 1.2 GB at mluke-base's size) costs nothing more while the duplicates are left alone, but comparing a
duplicate with its source through the mapping makes its pages resident until the model is gone. :func:`same_bytes`
compares a stored tensor with one in memory by reading the file a block at a time (``read``: the page cache is
never mapped into the process), and :func:`tensor_offsets` gives where each tensor's bytes are.

Writing: ``safetensors.torch.save_file`` of older releases (0.4, the floor of our dependency, among them) turns every
tensor into a ``bytes`` copy before writing it (1.2 GB more for mluke-base's entity table); :func:`write_safetensors`
writes the same layout straight from each tensor's memory, whatever the installed version.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping
from pathlib import Path

import torch

from kb.errors import InputFormatError

#: bytes read per step by :func:`same_bytes`
BLOCK = 16 << 20
#: the safetensors name of each torch type this module writes
DTYPE_CODES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}


def write_safetensors(
    path: str | os.PathLike[str], tensors: Mapping[str, torch.Tensor], metadata: Mapping[str, str] | None = None
) -> None:
    """Write ``tensors`` (none sharing memory) and ``metadata`` to ``path`` in the safetensors layout, each tensor
    written from its own memory (a contiguous CPU tensor is not copied; see the module docs).

    Raises:
        ValueError: a tensor type safetensors has no name for here (:data:`DTYPE_CODES`).
    """
    header: dict[str, object] = {}
    data: list[torch.Tensor] = []
    offset = 0
    for name, tensor in tensors.items():
        tensor = tensor.detach().contiguous().cpu()
        code = DTYPE_CODES.get(tensor.dtype)
        if code is None:
            raise ValueError(f"{path}: cannot write {name!r} of type {tensor.dtype} (known: {list(DTYPE_CODES)})")
        size = tensor.numel() * tensor.element_size()
        header[name] = {"dtype": code, "shape": list(tensor.shape), "data_offsets": [offset, offset + size]}
        data.append(tensor)
        offset += size
    if metadata:
        header["__metadata__"] = dict(metadata)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for tensor in data:
            if tensor.numel():
                f.write(tensor.reshape(-1).view(torch.uint8).numpy().data)


def tensor_offsets(path: str | os.PathLike[str]) -> dict[str, tuple[int, int]]:
    """``name -> (start, end)``: the absolute byte range of each tensor's data in a safetensors file.

    Raises:
        InputFormatError: not a safetensors file (a header that does not parse or points past the file), named.
    """
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        (length,) = struct.unpack("<Q", head) if len(head) == 8 else (size,)
        if length > size - 8:
            raise InputFormatError(f"{path}: not a safetensors file (header length {length} past the file's end)")
        try:
            header = json.loads(f.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputFormatError(f"{path}: not a safetensors file (header: {exc})") from None
    if not isinstance(header, dict):
        raise InputFormatError(f"{path}: not a safetensors file (the header is not a JSON object)")
    out: dict[str, tuple[int, int]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            raise InputFormatError(f"{path}: tensor {name!r} has no data_offsets [start, end]")
        start, end = 8 + length + offsets[0], 8 + length + offsets[1]
        if not 8 + length <= start <= end <= size:
            raise InputFormatError(f"{path}: tensor {name!r} lies outside the file")
        out[name] = (start, end)
    return out


def same_bytes(path: str | os.PathLike[str], key: str, tensor: torch.Tensor, *, block: int = BLOCK) -> bool:
    """Whether tensor ``key`` of the safetensors file ``path`` holds exactly the bytes of ``tensor`` (a CPU tensor
    of the same dtype; the file is little-endian, as every machine torch runs on), read ``block`` bytes at a time
    without mapping the file (see the module docs)."""
    start, end = tensor_offsets(path)[key]
    data = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    if end - start != data.numel():
        return False
    buffer = bytearray(min(block, data.numel()))
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        done = 0
        while done < data.numel():
            n = f.readinto(view[: min(len(buffer), data.numel() - done)])
            if not n:
                return False
            if not torch.equal(torch.frombuffer(buffer, dtype=torch.uint8, count=n), data[done : done + n]):
                return False
            done += n
    return True
