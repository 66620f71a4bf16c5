"""A KnowBert model holds and saves an entity table once: the layer's buffer is the table's tensor, a table that is
the mLUKE encoder's own entity embedding is that parameter (through casts, saving and loading), and folders
written before (format version 2: the table in both files) still load, into one tensor."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from kb.vocab import SPECIAL_ENTITIES, EntityVocab, VocabEntry
from mluke.knowbert import EntityTable, KnowBertModel
from mluke.knowbert.saving import weights_on_meta
from tests.mluke.knowbert.test_layer import make_candidates
from tests.mluke.knowbert.test_model import SMALL, inputs, tiny_encoder

TABLE_KEY = "encoder.luke.entity_embeddings.entity_embeddings.weight"
SPANS = [[(1, 2), (3, 3)], [(2, 3)]]
CANDS = [[[2, 4, 5], [3, 0, 0]], [[4, 5, 2]]]  # rows of the 6-entity table of the tiny mLUKE encoder


def vocab_of(encoder: torch.nn.Module, folder: Path) -> EntityVocab:
    """An entity vocabulary in mluke-base's order ([PAD] first) for the tiny encoder's 6 entities."""
    specials = [VocabEntry(i, None, name, 0, ()) for i, name in enumerate(SPECIAL_ENTITIES)]
    n = encoder.config.entity_vocab_size
    others = [VocabEntry(i, f"Q{i}", None, 0, (("en", f"Entity {i}"),)) for i in range(len(specials), n)]
    return EntityVocab.from_entries([*specials, *others], folder / "entity_vocab.sqlite", overwrite=True)


def checkpoint_model(tmp_path: Path) -> KnowBertModel:
    """A knowledge layer on a tiny mLUKE encoder, linking to that encoder's own entity table."""
    encoder = tiny_encoder("mluke")
    with torch.no_grad():  # distinctive weights, so that a wrong or missing tensor shows in the outputs
        for p in encoder.parameters():
            p.normal_(0.0, 0.2)
    torch.manual_seed(1)
    return KnowBertModel.from_encoder((encoder, None, vocab_of(encoder, tmp_path)), config=SMALL).eval()


def table_storages(model: KnowBertModel) -> set[int]:
    """The distinct memory holding tensors of the table's shape: parameters, buffers and the tables'."""
    shape = model.entities.vectors.shape
    tensors = [*model.parameters(), *model.buffers(), *(t.vectors for t in model.tables.values())]
    return {t.untyped_storage().data_ptr() for t in tensors if t.shape == shape}


def outputs(model: KnowBertModel) -> tuple[torch.Tensor, torch.Tensor]:
    ids, mask = inputs()
    batch = make_candidates(SPANS, CANDS)
    batch = replace(batch, entity_ids=batch.entity_ids % len(model.entities))  # the padding's garbage ids too
    with torch.no_grad():
        out = model(ids, mask, batch)
    assert out.linking_scores is not None
    return out.hidden_states, out.linking_scores


def test_a_checkpoint_table_is_one_tensor(tmp_path: Path):
    model = checkpoint_model(tmp_path)
    param = model.encoder.luke.entity_embeddings.entity_embeddings.weight
    assert model.table_parameters == {"kb": "luke.entity_embeddings.entity_embeddings.weight"}
    assert model.entities.vectors.data_ptr() == model.kar.entity_vectors.data_ptr() == param.data_ptr()
    assert len(table_storages(model)) == 1
    # frozen, in both training stages, and still in exactly one parameter group
    assert not param.requires_grad
    model.freeze_encoder(True)
    model.freeze_encoder(False)
    assert not param.requires_grad and model.encoder.luke.embeddings.word_embeddings.weight.requires_grad
    groups = [model.kar_parameters(), model.encoder_parameters(True), model.encoder_parameters(False)]
    assert sum(any(p is param for p in g) for g in groups) == 1


def test_outputs_equal_those_with_a_copied_table(tmp_path: Path):
    """Sharing changes nothing a forward computes: a model whose table is a copy gives the same bits."""
    model = checkpoint_model(tmp_path)
    copied = KnowBertModel(model.encoder, EntityTable(model.entities.vectors.clone(), model.entities.keys), SMALL)
    copied.kar.load_state_dict(model.kar.state_dict())
    assert copied.table_parameters == {} and len(table_storages(copied)) == 2
    for a, b in zip(outputs(model), outputs(copied.eval())):
        assert torch.equal(a, b)


def test_a_cast_converts_the_table_once(tmp_path: Path):
    model = checkpoint_model(tmp_path)
    expected = [t.double() for t in outputs(model)]
    model.double()
    param = model.encoder.luke.entity_embeddings.entity_embeddings.weight
    assert param.dtype == model.kar.entity_vectors.dtype == model.entities.vectors.dtype == torch.float64
    assert len(table_storages(model)) == 1 and model.kar.entity_vectors.data_ptr() == param.data_ptr()
    for a, b in zip(outputs(model), expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # a table of its own (not the encoder's) follows its layer's buffer
    other = KnowBertModel(tiny_encoder("xlmr"), EntityTable(torch.randn(5, 8), ["[PAD]", "[MASK]", "a", "b", "c"]))
    other.half()
    assert other.entities.vectors is other.kar.entity_vectors and other.entities.vectors.dtype == torch.float16


def test_the_table_is_saved_once_and_loads_as_one_tensor(tmp_path: Path):
    model = checkpoint_model(tmp_path)
    folder = model.save_pretrained(tmp_path / "model")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        stored, meta = set(f.keys()), f.metadata()
    shape = tuple(model.entities.vectors.shape)
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        assert not [k for k in stored if tuple(f.get_slice(k).get_shape()) == shape]  # not in the weights file
    assert json.loads(meta["tables"]) == {TABLE_KEY: "kb"}
    assert json.loads((folder / "knowbert.json").read_text())["version"] == 3
    loaded = KnowBertModel.from_pretrained(folder)
    assert loaded.table_parameters == model.table_parameters and len(table_storages(loaded)) == 1
    assert loaded.entities.keys == model.entities.keys
    for a, b in zip(outputs(model), outputs(loaded)):
        assert torch.equal(a, b)
    encoder = loaded.encoder
    assert encoder.lm_head.decoder.weight is encoder.luke.embeddings.word_embeddings.weight
    assert encoder.entity_predictions.decoder.weight is encoder.luke.entity_embeddings.entity_embeddings.weight


def write_version_2(model: KnowBertModel, folder: Path) -> Path:
    """The folder as format version 2 wrote it: every weight in model.safetensors (the encoder's entity embedding
    included), the table again in entities.safetensors."""
    model.save_pretrained(folder)
    meta = json.loads((folder / "knowbert.json").read_text())
    (folder / "knowbert.json").write_text(json.dumps({**meta, "version": 2}))
    kept: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    first: dict[tuple[int, tuple[int, ...]], str] = {}  # tied weights once, as version 2 wrote them
    for key, value in model.state_dict().items():
        seen = first.setdefault((value.data_ptr(), tuple(value.shape)), key)
        if seen != key:
            aliases[key] = seen
        else:
            kept[key] = value.clone()
    save_file(
        kept,
        str(folder / "model.safetensors"),
        metadata={"format": "pt", "aliases": json.dumps(aliases)},
    )
    return folder


def test_a_version_2_folder_loads_into_one_tensor(tmp_path: Path):
    model = checkpoint_model(tmp_path)
    folder = write_version_2(model, tmp_path / "v2")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        assert TABLE_KEY in set(f.keys())  # the old layout: the table in both files
    loaded = KnowBertModel.from_pretrained(folder)
    assert loaded.table_parameters == {"kb": "luke.entity_embeddings.entity_embeddings.weight"}
    assert len(table_storages(loaded)) == 1
    for a, b in zip(outputs(model), outputs(loaded)):
        assert torch.equal(a, b)
    # re-saved, it is written in the new layout, the table once
    again = loaded.save_pretrained(tmp_path / "v3")
    with safe_open(str(again / "model.safetensors"), framework="pt") as f:
        assert TABLE_KEY not in set(f.keys())


def test_a_version_2_folder_with_a_table_of_its_own_keeps_both(tmp_path: Path):
    """An encoder's entity embedding that is not the table (same shape, other values) stays a weight of its own."""
    model = checkpoint_model(tmp_path)
    own = EntityTable(torch.randn_like(model.entities.vectors), model.entities.keys)
    other = KnowBertModel(model.encoder, own, SMALL).eval()
    other.kar.load_state_dict(model.kar.state_dict())
    loaded = KnowBertModel.from_pretrained(write_version_2(other, tmp_path / "v2"))
    assert loaded.table_parameters == {} and len(table_storages(loaded)) == 2
    assert torch.equal(loaded.entities.vectors, own.vectors)
    param = loaded.encoder.luke.entity_embeddings.entity_embeddings.weight
    assert torch.equal(param, model.encoder.luke.entity_embeddings.entity_embeddings.weight)
    for a, b in zip(outputs(other), outputs(loaded)):
        assert torch.equal(a, b)


def test_loading_builds_the_encoder_without_weights():
    """The encoder a folder is loaded into has no weights of its own (meta), but real non-persistent buffers."""
    with weights_on_meta():
        encoder = tiny_encoder("xlmr")
    assert all(p.is_meta for p in encoder.parameters())
    assert not any(b.is_meta for b in encoder.buffers())
    assert not torch.nn.Linear(2, 2).weight.is_meta  # only inside the block


@pytest.mark.parametrize("kind", ["xlmr", "mluke"])
def test_a_loaded_model_trains_like_a_built_one(kind: str, tmp_path: Path):
    """Weights assigned from the mapped file are ordinary, writable parameters."""
    from tests.mluke.knowbert.test_model import tiny_model

    model = tiny_model(kind)
    loaded = KnowBertModel.from_pretrained(model.save_pretrained(tmp_path / "m")).train()
    ids, mask = inputs()
    out = loaded(ids, mask, make_candidates([[(1, 2)], [(2, 3)]], [[[1, 2]], [[3, 4]]], gold=[[0], [1]]))
    assert out.linking_loss is not None
    out.linking_loss.backward()
    before = loaded.kar.to_entity.weight.detach().clone()
    torch.optim.SGD(loaded.kar_parameters(), lr=0.1).step()
    assert not torch.equal(before, loaded.kar.to_entity.weight)
