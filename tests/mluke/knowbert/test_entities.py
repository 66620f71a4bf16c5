"""EntityTable: the reserved rows, the safetensors layout and its errors, and an mLUKE checkpoint's own
entity table (one checkpoint, both ways of using entities)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import mluke
from kb.errors import InputFormatError
from mluke.errors import CheckpointError
from mluke.knowbert import EntityTable, KnowBertModel
from mluke.knowbert.entities import MASK_KEY, PAD_KEY


def test_reserved_rows_are_added_as_zeros():
    vectors = torch.randn(3, 4)
    table = EntityTable.from_vectors(vectors, ["Q1", "Q2", "Q3"])
    assert table.keys == [PAD_KEY, MASK_KEY, "Q1", "Q2", "Q3"]
    assert (table.pad_row, table.mask_row, table.dim, len(table)) == (0, 1, 4, 5)
    assert torch.equal(table.vectors[:2], torch.zeros(2, 4)) and torch.equal(table.vectors[2:], vectors)
    assert table.rows(["Q2", "Q9"]) == [3, None] and table.key_to_row["Q3"] == 4
    assert not table.vectors.requires_grad


def test_a_pad_row_elsewhere_moves_to_row_zero():
    vectors = torch.arange(12.0).view(4, 3)
    table = EntityTable.from_vectors(vectors, [MASK_KEY, "Q1", PAD_KEY, "Q2"])  # the lite checkpoints' order
    assert table.keys == [PAD_KEY, MASK_KEY, "Q1", "Q2"]
    assert torch.equal(table.vectors, vectors[[2, 0, 1, 3]])
    with pytest.raises(ValueError, match="'Q1' appears more than once"):
        EntityTable.from_vectors(torch.zeros(2, 3), ["Q1", "Q1"])
    with pytest.raises(ValueError, match="row 0"):
        EntityTable(vectors, ["Q0", MASK_KEY, PAD_KEY, "Q2"])


def test_save_and_read_back(tmp_path: Path):
    table = EntityTable.from_vectors(torch.randn(5, 6), ["Q1", "Q2", "東京", "Q4", "Q5"])
    path = table.save(tmp_path / "table.safetensors")
    again = EntityTable.from_safetensors(path)
    assert again.keys == table.keys and torch.equal(again.vectors, table.vectors)
    with pytest.raises(Exception, match="already exists"):
        table.save(path)


def write(path: Path, tensors: dict[str, torch.Tensor], keys: object = None, raw_keys: str | None = None) -> Path:
    meta = {} if keys is None and raw_keys is None else {"keys": raw_keys if raw_keys is not None else json.dumps(keys)}
    save_file(tensors, str(path), metadata=meta)
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "no such entity table"),
        (lambda p: (p.write_bytes(b"not a safetensors file at all"), p)[1], "not a safetensors file"),
        (lambda p: write(p, {"weights": torch.zeros(2, 3)}, ["a", "b"]), "no tensor 'vectors' .found: weights"),
        (lambda p: write(p, {"vectors": torch.zeros(2, 3)}), "no 'keys' in the metadata"),
        (lambda p: write(p, {"vectors": torch.zeros(2, 3)}, raw_keys="[a"), "'keys' is not valid JSON"),
        (lambda p: write(p, {"vectors": torch.zeros(2, 3)}, {"a": 1}), "must be a JSON list of strings"),
        (lambda p: write(p, {"vectors": torch.zeros(2, 3)}, ["a"]), "1 keys for 2 rows"),
        (lambda p: write(p, {"vectors": torch.zeros(3)}, ["a", "b", "c"]), r"expected float \[N, d\]"),
        (lambda p: write(p, {"vectors": torch.zeros(2, 3)}, ["a", "a"]), "'a' appears more than once"),
    ],
)
def test_bad_table_files_are_named(tmp_path: Path, make, message):
    path = make(tmp_path / "bad.safetensors")
    with pytest.raises(InputFormatError, match=message) as info:
        EntityTable.from_safetensors(path)
    assert str(path) in str(info.value)


def test_from_checkpoint_is_the_mluke_entity_table(tiny_checkpoint: Path):
    bundle = mluke.load(tiny_checkpoint)
    table = EntityTable.from_checkpoint(bundle)
    weight = bundle.model.luke.entity_embeddings.entity_embeddings.weight.detach()
    vocab = bundle.entity_vocab
    assert vocab is not None and len(table) == len(vocab) == weight.shape[0] and table.dim == 16
    # lite order in the file ([MASK]=0, [PAD]=2): the table puts [PAD] at row 0 and keeps [MASK]'s vector
    assert torch.equal(table.vectors[0], weight[vocab.pad_id])
    assert torch.equal(table.vectors[table.mask_row], weight[vocab.mask_id])
    tokyo = vocab.get_id("en", "Tokyo")
    assert tokyo is not None and torch.equal(table.vectors[table.key_to_row["en:Tokyo"]], weight[tokyo])
    assert {"[UNK]", "[MASK2]", "en:Japan", "en:Paris", "en:France"} <= set(table.keys)
    # the same checkpoint, the other way of using entities: a knowledge layer on its words, its own table
    model = KnowBertModel.from_encoder(bundle)
    assert model.entities.keys == table.keys and torch.equal(model.kar.entity_vectors, table.vectors)
    assert model.kar_layer == 1


def test_from_checkpoint_needs_an_entity_vocabulary(tiny_checkpoint: Path):
    bundle = mluke.load(tiny_checkpoint)
    with pytest.raises(CheckpointError, match="entity vocabulary"):
        EntityTable.from_checkpoint((bundle.model, bundle.tokenizer, None))
