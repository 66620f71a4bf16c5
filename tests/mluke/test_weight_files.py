"""Safetensors files written from the tensors' memory read back with safetensors itself, and tensors compared
with a file a block at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from kb.errors import InputFormatError
from mluke.models.weight_files import same_bytes, tensor_offsets, write_safetensors


def tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "table": torch.randn(7, 3, generator=g),
        "half": torch.randn(5, generator=g).to(torch.bfloat16),
        "ids": torch.arange(6).reshape(2, 3),
        "mask": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5, dtype=torch.float64),
        "empty": torch.zeros(0, 4),
        "strided": torch.arange(12.0).reshape(3, 4).t(),  # not contiguous: written in row order
    }


def test_written_files_read_back_with_safetensors(tmp_path: Path):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, tensors(), {"keys": json.dumps(["a", "b"])})
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"keys": '["a", "b"]'}
        read = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118  (a safe_open handle is not iterable)
    expected = tensors()
    assert read.keys() == expected.keys()
    for name, tensor in expected.items():
        assert read[name].dtype == tensor.dtype and torch.equal(read[name], tensor), name
    # the same bytes as safetensors' own writer gives for the tensors' data
    save_file({k: v.contiguous() for k, v in expected.items()}, str(tmp_path / "ref.safetensors"))
    for name, tensor in expected.items():
        assert same_bytes(path, name, tensor) and same_bytes(tmp_path / "ref.safetensors", name, tensor)
    with pytest.raises(ValueError, match="complex"):
        write_safetensors(tmp_path / "bad.safetensors", {"c": torch.zeros(2, dtype=torch.complex64)})


def test_same_bytes_reads_in_blocks_and_finds_one_changed_value(tmp_path: Path):
    path = tmp_path / "w.safetensors"
    table = torch.randn(1000, 8)
    write_safetensors(path, {"before": torch.ones(3), "table": table})
    assert same_bytes(path, "table", table, block=100)  # 320 blocks, the last one short
    changed = table.clone()
    changed[999, 7] += 1.0
    assert not same_bytes(path, "table", changed, block=100)
    assert not same_bytes(path, "table", table[:10], block=100)  # another size
    start, end = tensor_offsets(path)["table"]
    assert end - start == table.numel() * 4


def test_a_damaged_header_is_named(tmp_path: Path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\xff" * 16)
    with pytest.raises(InputFormatError, match="not a safetensors file") as info:
        tensor_offsets(path)
    assert str(path) in str(info.value)
