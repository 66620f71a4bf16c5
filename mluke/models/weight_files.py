"""Reading safetensors weight files without touching what the model does not keep.

``safetensors`` (0.4 and later) maps a file and returns tensors that are views of the mapping: nothing is read
until a tensor is used, and the pages used count in the process's resident memory for as long as the mapping
lives. A checkpoint that stores tied weights twice (mLUKE's word and entity decoders written out in full, 1 GB
and 1.2 GB at mluke-base's size) costs nothing more while the duplicates are left alone, but comparing a
duplicate with its source through the mapping makes its pages resident until the model is gone. :func:`same_bytes`
compares a stored tensor with one in memory by reading the file a block at a time (``read``: the page cache is
never mapped into the process), and :func:`tensor_offsets` gives where each tensor's bytes are.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import torch

from kb.errors import InputFormatError

#: bytes read per step by :func:`same_bytes`
BLOCK = 16 << 20


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
