"""KnowBertModel with two knowledge bases (KnowBert-W+W style) on tiny random encoders: each knowledge base's layer at
its own depth with its own table, a knowledge base without candidates skipped, losses summed, parameter groups,
saving and loading (format version 2, and version-1 folders)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kb.errors import InputFormatError
from mluke.knowbert import EntityTable, KnowBertConfig, KnowBertModel
from tests.mluke.knowbert.test_layer import CANDS, SPANS, make_candidates, make_table
from tests.mluke.knowbert.test_model import SMALL, inputs, tiny_encoder

#: KB "wiki" after layer 1 of 3, KB "geo" (another table, of another dimension) after layer 2
WIKI = KnowBertConfig(**{**SMALL.to_dict(), "kar_layer": 1})
GEO = KnowBertConfig(**{**SMALL.to_dict(), "kar_layer": 2})
GEO_SPANS = [[(2, 3)], [(1, 1), (2, 2)]]
GEO_CANDS = [[[2, 3]], [[4], [5, 6, 7]]]


def geo_table(seed: int = 3) -> EntityTable:
    return make_table(n=9, dim=16, seed=seed)


def two_kb_model(kind: str = "xlmr", geo: EntityTable | None = None) -> KnowBertModel:
    encoder = tiny_encoder(kind, layers=3)
    torch.manual_seed(1)
    tables = {"wiki": make_table(), "geo": geo or geo_table()}
    return KnowBertModel(encoder, tables, {"wiki": WIKI, "geo": GEO}).eval()


def both(gold: bool = False) -> dict[str, object]:
    return {
        "wiki": make_candidates(SPANS, CANDS, gold=[[1, 3], [0]] if gold else None),
        "geo": make_candidates(GEO_SPANS, GEO_CANDS, gold=[[0], [0, 3]] if gold else None, seed=1),
    }


def layer_outputs(
    model: KnowBertModel, ids: torch.Tensor, mask: torch.Tensor, candidates: object
) -> list[torch.Tensor]:
    """The word output of every encoder layer in a forward, as the layer gives it (before a knowledge layer after
    it: these hooks run before the model's)."""
    seen: list[torch.Tensor] = []
    hooks = [
        layer.register_forward_hook(
            lambda _m, _a, out: seen.append((out[0] if isinstance(out, tuple) else out).clone())
        )
        for layer in model.encoder.base_model.encoder.layer
    ]
    try:
        model(ids, mask, candidates)
    finally:
        for h in hooks:
            h.remove()
    return seen


@pytest.mark.parametrize("kind", ["xlmr", "mluke"])
def test_two_knowledge_bases_run_at_their_own_layers_with_their_own_tables(kind):
    model = two_kb_model(kind)
    assert model.names == ["wiki", "geo"] and model.kar_layers == {"wiki": 1, "geo": 2}
    assert model.kar is model.knowledge_layer("wiki") and model.entities is model.tables["wiki"]
    assert model.knowledge_layer("geo").num_entities == len(geo_table())
    ids, mask = inputs()
    out = model(ids, mask, both())
    assert out.kb_scores["wiki"].shape == (2, 2, 3) and out.kb_scores["geo"].shape == (2, 2, 3)
    assert torch.equal(out.linking_scores, out.kb_scores["wiki"]) and out.hidden_states.shape == (2, 6, 32)
    # the geo layer is the one after layer 2: its input is layer 2's output with the wiki layer below
    base = model.encoder.base_model
    below = layer_outputs(model, ids, mask, {"wiki": both()["wiki"]})
    expected = model.knowledge_layer("geo")(below[1], both()["geo"])
    torch.testing.assert_close(out.kb_scores["geo"], expected.linking_scores, rtol=0, atol=1e-6)
    # another geo table changes nothing below geo's layer (after layer 2), but geo's scores and what is above
    other = two_kb_model(kind, geo=geo_table(seed=7))
    a, b = layer_outputs(model, ids, mask, both()), layer_outputs(other, ids, mask, both())
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.allclose(a[2], b[2])
    out2 = other(ids, mask, both())
    assert torch.equal(out2.kb_scores["wiki"], out.kb_scores["wiki"])
    assert not torch.allclose(out2.kb_scores["geo"], out.kb_scores["geo"])
    assert base is model.encoder.base_model


def test_a_knowledge_base_missing_from_the_candidates_is_skipped():
    model = two_kb_model()
    ids, mask = inputs()
    bare = model.encoder.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
    only_wiki = model(ids, mask, {"wiki": both()["wiki"], "geo": None})
    one_kb = KnowBertModel(model.encoder, {"wiki": model.tables["wiki"]}, {"wiki": WIKI}).eval()
    one_kb.kar.load_state_dict(model.kar.state_dict())
    assert torch.equal(only_wiki.hidden_states, one_kb(ids, mask, both()["wiki"]).hidden_states)
    assert list(only_wiki.kb_scores) == ["wiki"]
    only_geo = model(ids, mask, {"geo": both()["geo"]})
    assert list(only_geo.kb_scores) == ["geo"] and only_geo.linking_scores is None
    assert not torch.allclose(only_geo.hidden_states, bare)
    # with wiki skipped, the input of geo's layer is the bare encoder's layer 2; with wiki, it is not
    bare_layers = layer_outputs(model, ids, mask, None)
    assert torch.equal(layer_outputs(model, ids, mask, {"geo": both()["geo"]})[1], bare_layers[1])
    assert not torch.allclose(layer_outputs(model, ids, mask, both())[1], bare_layers[1])
    assert torch.equal(model(ids, mask, {}).hidden_states, bare)
    with pytest.raises(ValueError, match=r"unknown knowledge base\(s\) \['wordnet'\]"):
        model(ids, mask, {"wordnet": both()["geo"]})


def test_losses_are_summed_over_the_knowledge_bases_with_gold():
    model = two_kb_model()
    ids, mask = inputs()
    cands = both(gold=True)
    out = model(ids, mask, cands)
    assert set(out.kb_losses) == {"wiki", "geo"}
    for name in ("wiki", "geo"):
        expected = model.knowledge_layer(name).linking_loss(out.kb_scores[name], cands[name].gold)
        torch.testing.assert_close(out.kb_losses[name], expected)
    torch.testing.assert_close(out.linking_loss, out.kb_losses["wiki"] + out.kb_losses["geo"])
    half = model(ids, mask, {"wiki": both()["wiki"], "geo": cands["geo"]})
    assert set(half.kb_losses) == {"geo"} and torch.equal(half.linking_loss, half.kb_losses["geo"])
    short = model(ids, mask, cands, linking_only=True)  # stops after geo's layer (the highest)
    torch.testing.assert_close(short.linking_loss, out.linking_loss)
    decision = model.link(ids, mask, both(), "geo")
    assert decision.candidate.shape == (2, 2)
    with pytest.raises(ValueError, match="no knowledge base 'x'"):
        model.link(ids, mask, both(), "x")


def test_parameter_groups_with_two_layers():
    model = two_kb_model()
    kar, below, above = model.kar_parameters(), model.encoder_parameters(True), model.encoder_parameters(False)
    ids = [{id(p) for p in g} for g in (kar, below, above)]
    assert ids[0] | ids[1] | ids[2] == {id(p) for p in model.parameters()}
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert {id(p) for p in model.knowledge_layer("geo").parameters()} <= ids[0]
    layers = model.encoder.base_model.encoder.layer
    assert all(id(p) in ids[1] for p in layers[0].parameters())  # below the lowest layer (wiki's, after 1)
    assert all(id(p) in ids[2] for p in layers[1].parameters())  # between wiki's and geo's: "above"


def test_same_layer_runs_in_the_given_order():
    encoder = tiny_encoder("xlmr", layers=3)
    torch.manual_seed(1)
    tables = {"b": geo_table(), "a": make_table()}
    model = KnowBertModel(encoder, tables, {"a": WIKI, "b": WIKI}).eval()
    assert model.run_order == ["b", "a"] and model.names == ["b", "a"]
    ids, mask = inputs()
    out = model(ids, mask, {"a": both()["wiki"], "b": both()["geo"]})
    first = model.knowledge_layer("b")(layer_outputs(model, ids, mask, None)[0], both()["geo"])
    second = model.knowledge_layer("a")(first.hidden_states, both()["wiki"])
    torch.testing.assert_close(out.kb_scores["a"], second.linking_scores, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="knowledge base names"):
        KnowBertModel(encoder, {"a.b": make_table()})


@pytest.mark.parametrize("kind", ["xlmr", "mluke"])
def test_two_knowledge_bases_save_and_load(kind, tmp_path: Path):
    model = two_kb_model(kind)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    folder = model.save_pretrained(tmp_path / "kb")
    assert sorted(p.name for p in folder.iterdir()) == [
        "entities-geo.safetensors",
        "entities.safetensors",
        "knowbert.json",
        "model.safetensors",
    ]
    meta = json.loads((folder / "knowbert.json").read_text())
    assert meta["version"] == 3 and [kb["name"] for kb in meta["knowledge_bases"]] == ["wiki", "geo"]
    loaded = KnowBertModel.from_pretrained(folder)
    assert loaded.names == model.names and loaded.configs == model.configs and loaded.kar_layers == model.kar_layers
    assert loaded.tables["geo"].keys == model.tables["geo"].keys
    ids, mask = inputs()
    a, b = model(ids, mask, both()), loaded(ids, mask, both())
    assert torch.equal(a.hidden_states, b.hidden_states)
    assert all(torch.equal(a.kb_scores[n], b.kb_scores[n]) for n in model.names)


def test_version_one_folders_load_and_broken_version_two_folders_are_refused(tmp_path: Path):
    one = KnowBertModel(tiny_encoder("xlmr"), make_table(), SMALL).eval()
    folder = one.save_pretrained(tmp_path / "v1")
    meta = json.loads((folder / "knowbert.json").read_text())
    [kb] = meta.pop("knowledge_bases")
    assert kb == {"name": "kb", "config": SMALL.to_dict(), "entities": "entities.safetensors"}
    # the layout the one-knowledge-base code wrote (format version 1): its settings under "knowbert"
    (folder / "knowbert.json").write_text(json.dumps({**meta, "version": 1, "knowbert": SMALL.to_dict()}))
    loaded = KnowBertModel.from_pretrained(folder)
    assert loaded.names == ["kb"] and loaded.config == SMALL
    ids, mask = inputs()
    assert torch.equal(loaded(ids, mask, both()["wiki"]).hidden_states, one(ids, mask, both()["wiki"]).hidden_states)

    two = two_kb_model().save_pretrained(tmp_path / "v2")
    meta = json.loads((two / "knowbert.json").read_text())
    (two / "entities-geo.safetensors").rename(tmp_path / "moved.safetensors")
    with pytest.raises(InputFormatError, match=r"entities-geo\.safetensors: no such entity table"):
        KnowBertModel.from_pretrained(two)
    (tmp_path / "moved.safetensors").rename(two / "entities-geo.safetensors")
    dup = {**meta, "knowledge_bases": [meta["knowledge_bases"][0], {**meta["knowledge_bases"][1], "name": "wiki"}]}
    (two / "knowbert.json").write_text(json.dumps(dup))
    with pytest.raises(InputFormatError, match=r"knowbert\.json: knowledge_bases\[1\]: .*'wiki' is listed twice"):
        KnowBertModel.from_pretrained(two)
    typo = json.loads(json.dumps(meta))
    typo["knowledge_bases"][1]["config"]["threshhold"] = 0.1
    (two / "knowbert.json").write_text(json.dumps(typo))
    with pytest.raises(InputFormatError, match=r"knowledge_bases\[1\]: 'config': unknown setting"):
        KnowBertModel.from_pretrained(two)


def test_the_fine_tuning_copy_shares_every_table():
    from mluke.finetuning.knowledge import knowbert_encoder

    model = two_kb_model()
    copy = knowbert_encoder(model)
    for name in model.names:
        assert copy.knowledge_layer(name).entity_vectors is model.knowledge_layer(name).entity_vectors
        assert copy.tables[name].vectors is model.tables[name].vectors
    assert copy.knowledge_layer("geo").to_entity.weight is not model.knowledge_layer("geo").to_entity.weight
    assert all(p.requires_grad for p in copy.encoder.parameters())
