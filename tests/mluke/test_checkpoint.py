import shutil

import pytest
import torch
from transformers import LukeForMaskedLM

import mluke
from kb import KbFormatError, OutputExistsError
from mluke.models.checkpoint import CheckpointError, load_model, read_state_dict
from mluke.models.compat import TRANSFORMERS_MAJOR
from mluke.models.masked_lm import MlukeForMaskedLM, chunked_logsumexp
from tests.mluke.conftest import write_tiny_checkpoint

TEXT = "The capital of Japan is <mask>."


def _inputs(tok):
    return tok(
        [TEXT, "Tokyo is the capital of Japan."],
        entity_spans=[[(15, 20), (24, 30)], [(0, 5), (24, 29)]],
        entities=[[("en", "Japan"), None], [("en", "Tokyo"), ("en", "Japan")]],
    )


def test_outputs_equal_transformers_with_correct_ids_and_tied_head(tiny_checkpoint):
    model, tok, vocab = mluke.load(tiny_checkpoint)
    assert vocab.mask_id == 0 and vocab.pad_id == 2  # read from the file, lite order
    inputs = _inputs(tok)
    ref = LukeForMaskedLM.from_pretrained(tiny_checkpoint).eval()
    untied = ref.lm_head.decoder.weight.detach().clone()
    ref.lm_head.decoder.weight = ref.luke.embeddings.word_embeddings.weight  # what transformers 5 forgets
    with torch.no_grad():
        ours = model(**inputs)
        theirs = ref(**inputs)
    assert (ours.logits - theirs.logits).abs().max() <= 1e-5
    assert (ours.entity_logits - theirs.entity_logits).abs().max() <= 1e-5
    if TRANSFORMERS_MAJOR >= 5:  # without the tie 5.x's word predictions are random: the fix matters
        assert not torch.allclose(untied, model.lm_head.decoder.weight)
    else:  # 4.x ties the word head itself
        assert torch.equal(untied, model.lm_head.decoder.weight)


def test_heads_are_tied_and_row_zero_is_real(tiny_checkpoint):
    model, _, _ = mluke.load(tiny_checkpoint)
    assert model.lm_head.decoder.weight is model.luke.embeddings.word_embeddings.weight
    assert model.entity_predictions.decoder.weight is model.luke.entity_embeddings.entity_embeddings.weight
    state = read_state_dict(tiny_checkpoint)
    row0 = state["luke.entity_embeddings.entity_embeddings.weight"][0]
    assert torch.equal(model.luke.entity_embeddings.entity_embeddings.weight[0], row0) and row0.abs().sum() > 0
    fresh = MlukeForMaskedLM(model.config)
    assert fresh.luke.entity_embeddings.entity_embeddings.weight[0].abs().sum() > 0
    assert fresh.luke.entity_embeddings.entity_embeddings.padding_idx is None
    fresh.luke.entity_embeddings.entity_embeddings.weight.sum().backward()
    assert fresh.luke.entity_embeddings.entity_embeddings.weight.grad[0].abs().sum() > 0  # row 0 learns


def test_save_load_round_trip_is_bit_for_bit(tiny_checkpoint, tmp_path):
    bundle = mluke.load(tiny_checkpoint)
    out = mluke.save(bundle, tmp_path / "saved")
    again = mluke.load(out)
    a, b = bundle.model.state_dict(), again.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert again.entity_vocab.special_ids == bundle.entity_vocab.special_ids
    assert [e.names for e in again.entity_vocab] == [e.names for e in bundle.entity_vocab]
    assert dict(_inputs(again.tokenizer)).keys() == dict(_inputs(bundle.tokenizer)).keys()
    assert all(torch.equal(x, y) for x, y in zip(_inputs(again.tokenizer).values(), _inputs(bundle.tokenizer).values()))
    # transformers' own class reads what we wrote correctly (the word head is written out)
    ref = LukeForMaskedLM.from_pretrained(out).eval()
    inputs = _inputs(bundle.tokenizer)
    with torch.no_grad():
        assert (ref(**inputs).logits - bundle.model(**inputs).logits).abs().max() <= 1e-5
    with pytest.raises(OutputExistsError):
        mluke.save(bundle, out)


@pytest.mark.parametrize(
    "entity_aware, lite, weights", [(False, False, "safetensors"), (True, True, "bin"), (False, True, "safetensors")]
)
def test_variants_load(spm_model, tmp_path, entity_aware, lite, weights):
    folder = write_tiny_checkpoint(tmp_path / "ck", spm_model, entity_aware=entity_aware, lite=lite, weights=weights)
    model, tok, vocab = mluke.load(folder)
    assert model.config.use_entity_aware_attention == entity_aware and len(vocab) == (4 if lite else 8)
    with torch.no_grad():
        out = model(**tok(TEXT, entity_spans=[(24, 30)]))
    assert out.entity_logits.shape == (1, 1, len(vocab))


@pytest.mark.parametrize("entity_aware", [True, False])
def test_encode_entities_equals_the_full_encoder(spm_model, tmp_path, entity_aware):
    folder = write_tiny_checkpoint(tmp_path / "ck", spm_model, entity_aware=entity_aware)
    model, tok, _ = mluke.load(folder)
    # a batch with word and entity padding (the second text is shorter and has one entity)
    inputs = tok([TEXT, "Tokyo."], entity_spans=[[(15, 20), (24, 30)], [(0, 5)]])
    assert inputs["entity_attention_mask"][1, 1] == 0 and inputs["attention_mask"][1, -1] == 0
    with torch.no_grad():
        _, full = model.encode(**inputs)
        fast = model.encode_entities(**inputs)
    assert fast.shape == full.shape
    assert torch.allclose(fast[0], full[0], atol=1e-5) and torch.allclose(fast[1, :1], full[1, :1], atol=1e-5)
    with pytest.raises(ValueError, match="entity_ids"):
        model.encode_entities(**tok(TEXT))


def test_missing_entity_aware_queries_start_from_the_word_query(spm_model, tmp_path):
    drop = tuple(
        f"luke.encoder.layer.{i}.attention.self.{q}_query.{p}"
        for i in range(2)
        for q in ("w2e", "e2w", "e2e")
        for p in ("weight", "bias")
    )
    folder = write_tiny_checkpoint(tmp_path / "ck", spm_model, drop=drop)
    model = load_model(folder)
    att = model.luke.encoder.layer[1].attention.self
    assert torch.equal(att.w2e_query.weight, att.query.weight) and torch.equal(att.e2e_query.bias, att.query.bias)


def test_missing_unexpected_or_misshapen_weights_fail_clearly(spm_model, tmp_path):
    folder = write_tiny_checkpoint(tmp_path / "a", spm_model, drop=("luke.encoder.layer.1.output.dense.weight",))
    with pytest.raises(CheckpointError, match="1 missing weight.*luke.encoder.layer.1.output.dense.weight"):
        mluke.load(folder)
    folder = write_tiny_checkpoint(tmp_path / "b", spm_model)
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    state["classifier.weight"] = torch.zeros(2, 2)
    state["luke.embeddings.position_ids"] = torch.arange(514)[None]  # old transformers saved this buffer: fine
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="1 unexpected weight.*classifier.weight"):
        mluke.load(folder)
    del state["classifier.weight"]
    state["lm_head.dense.bias"] = torch.zeros(3)
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="wrong shape.*lm_head.dense.bias"):
        mluke.load(folder)
    state = {k[len("luke.") :]: v for k, v in state.items() if k.startswith("luke.")}
    torch.save(state, folder / "pytorch_model.bin")
    encoder = mluke.load(folder).model  # a bare LukeModel loads as an encoder (English LUKE); heads are absent
    with pytest.raises(CheckpointError, match="without prediction heads"):
        encoder.lm_head.decoder


def test_bad_folders(tiny_checkpoint, tmp_path):
    with pytest.raises(KbFormatError, match="not a hub model name"):
        mluke.load(tmp_path / "nowhere" / "x" / "y")
    with pytest.raises(mluke.MlukeError, match="could not fetch 'studio-ousia/no-such-model'"):
        mluke.load("studio-ousia/no-such-model")
    folder = tmp_path / "ck"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / "pytorch_model.bin").write_bytes(b"garbage")
    with pytest.raises(KbFormatError, match="cannot read the weights"):
        mluke.load(folder)
    (folder / "pytorch_model.bin").unlink()
    with pytest.raises(KbFormatError, match="no model.safetensors or pytorch_model.bin"):
        mluke.load(folder)
    (folder / "config.json").write_text("{")
    with pytest.raises(KbFormatError, match="config.json: not valid JSON"):
        mluke.load(folder)


def test_candidate_scores_equal_full_softmax(tiny_checkpoint):
    model, tok, _vocab = mluke.load(tiny_checkpoint)
    inputs = tok(TEXT, entity_spans=[(24, 30)])
    with torch.no_grad():
        words, ents = model.encode(**inputs)
        full = model(**inputs)
        h = ents[:, 0]
        cands = torch.tensor([4, 6, 0])
        expected = torch.log_softmax(full.entity_logits[:, 0], -1)[:, cands]
        for chunk in (3, 5, 65536):
            assert torch.allclose(model.entity_scores(h, cands, chunk_size=chunk), expected, atol=1e-5)
        assert torch.allclose(
            model.entity_scores(h, cands, normalize=False), full.entity_logits[:, 0, cands], atol=1e-5
        )
        per_row = model.entity_scores(h.repeat(2, 1), torch.tensor([[4, 6], [0, 5]]))
        assert torch.allclose(
            per_row, torch.log_softmax(full.entity_logits[0, 0], -1)[torch.tensor([[4, 6], [0, 5]])], atol=1e-5
        )
        pos = (inputs["input_ids"][0] == tok.mask_id).nonzero()[0, 0]
        wfull = torch.log_softmax(full.logits[0, pos], -1)
        assert torch.allclose(model.word_scores(words[0, pos][None])[0], wfull, atol=1e-5)
        wc = torch.tensor([5, 17, 300])
        assert torch.allclose(model.word_scores(words[0, pos][None], wc, chunk_size=7)[0], wfull[wc], atol=1e-5)
        m = torch.randn(3, 8)
        table, bias = torch.randn(50, 8), torch.randn(50)
        assert torch.allclose(chunked_logsumexp(m, table, bias, 7), torch.logsumexp(m @ table.T + bias, -1), atol=1e-5)


def test_losses_at_masked_positions_equal_full_forward(tiny_checkpoint):
    model, tok, _ = mluke.load(tiny_checkpoint)
    inputs = _inputs(tok)
    labels = torch.full_like(inputs["input_ids"], -100)
    labels[0, 3], labels[1, 2] = 17, 40
    ent_labels = torch.tensor([[4, -100], [-100, 5]])
    with torch.no_grad():
        full = model(**inputs, labels=labels, entity_labels=ent_labels)
        words, ents = model.encode(**inputs)
        assert torch.allclose(model.mlm_loss(words, labels), full.mlm_loss, atol=1e-5)
        assert torch.allclose(model.mep_loss(ents, ent_labels), full.mep_loss, atol=1e-5)
    with pytest.raises(ValueError, match="entity_position_ids"):
        model.encode(input_ids=inputs["input_ids"], entity_ids=inputs["entity_ids"])
    with pytest.raises(ValueError, match="entity_position_ids"):
        model(input_ids=inputs["input_ids"], entity_ids=inputs["entity_ids"])


def _resized(folder, rows: int, pad_to_multiple_of: int | None = None) -> LukeForMaskedLM:
    """The checkpoint's model with its word rows resized as ``resize_token_embeddings`` does, written the way
    transformers 4.x writes it (decoder tied to the word embeddings, the output bias resized with them)."""
    model = LukeForMaskedLM.from_pretrained(folder)
    model.lm_head.decoder.weight = model.luke.embeddings.word_embeddings.weight  # mLUKE ties them
    model.resize_token_embeddings(rows, pad_to_multiple_of=pad_to_multiple_of)
    words = model.config.vocab_size
    model.lm_head.decoder.weight = torch.nn.Parameter(model.luke.embeddings.word_embeddings.weight.detach().clone())
    old = model.lm_head.bias.detach()
    bias = torch.nn.Parameter(torch.cat([old, torch.zeros(max(words - len(old), 0))])[:words])
    model.lm_head.bias = model.lm_head.decoder.bias = bias
    return model


def test_word_embeddings_padded_to_a_multiple_load_and_fewer_rows_do_not(tiny_checkpoint, tmp_path):
    # resize_token_embeddings(pad_to_multiple_of=...) writes more word rows (and vocab_size) than tokenizer ids
    model, tok, _ = mluke.load(tiny_checkpoint)
    folder = tmp_path / "padded"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / "pytorch_model.bin").unlink()
    padded = _resized(tiny_checkpoint, tok.vocab_size, pad_to_multiple_of=64)
    rows = padded.config.vocab_size
    assert rows % 64 == 0 and rows > tok.vocab_size
    padded.save_pretrained(folder)
    again, again_tok, _ = mluke.load(folder)
    assert again.config.vocab_size == rows and again_tok.vocab_size == tok.vocab_size
    inputs = _inputs(tok)
    with torch.no_grad():
        want, got = model(**inputs), again(**inputs)
    assert got.logits.shape[-1] == rows
    assert (got.logits[..., : tok.vocab_size] - want.logits).abs().max() <= 1e-4
    _resized(tiny_checkpoint, tok.vocab_size - 1).save_pretrained(folder)
    with pytest.raises(CheckpointError, match="more than the .* of config.json's vocab_size"):
        mluke.load(folder)
