"""The entity typing head (mluke.finetuning, task "typing"): inputs, learning, resuming, checkpoints, and logits
equal to transformers' ``LukeForEntityClassification`` given the same weights."""

import pytest
import torch

import mluke
from mluke.finetuning import FineTuneConfig, FineTuner, load_transfer, new_model, predict_types, save_transfer
from mluke.finetuning.inputs import collate, typing_rows
from tests.mluke.conftest import assert_same_weights, interrupt_at, right_side
from tests.mluke.head_parity import head_logits

LABELS = ["location", "person", "place"]
#: a toy set is trained to a clear separation: every label's right side above this probability after EPOCHS epochs
MARGIN, EPOCHS = 0.6, 10
TOY = [
    ("The city of Paris is big .", "Paris", ["location", "place"]),
    ("The city of Rome is old .", "Rome", ["location", "place"]),
    ("A man called Bob said hello .", "Bob", ["person"]),
    ("A man called Tom said hello .", "Tom", ["person"]),
]


def _spans(items):
    return [(t.index(m), t.index(m) + len(m)) for t, m, _ in items]


@pytest.fixture(scope="module")
def bundle(tiny_demo):
    return mluke.load(tiny_demo)


def _golds(items):
    return [[int(l in g) for l in LABELS] for _, _, g in items]


def _rows(bundle, items):
    return typing_rows(bundle.tokenizer, [t for t, _, _ in items], _spans(items), labels=_golds(items))


def test_rows_put_one_mask_over_the_mention(bundle):
    tok = bundle.tokenizer
    (row,) = typing_rows(tok, ["The city of Paris is big ."], [(12, 17)], labels=[[1, 0, 1]])
    assert row.entity_ids == [1] and tok.decode(row.ids[slice(*row.slots[0])]).strip() == "Paris"
    assert row.ids[0] == tok.bos_id and row.ids[-1] == tok.eos_id and row.labels == [1, 0, 1]
    text = "word " * 40 + "Paris ."
    (cut,) = typing_rows(tok, [text], [(200, 205)], max_length=12)  # the mention is past the limit: kept
    assert len(cut.ids) <= 12 and tok.decode(cut.ids[slice(*cut.slots[0])]).strip() == "Paris"
    batch = collate([row, cut], pad_id=tok.pad_id)
    assert batch["labels"].shape == (2, 3) and batch["labels"][0].tolist() == [1, 0, 1]
    assert (batch["labels"][1] == -100).all() and batch["entity_ids"].tolist() == [[1], [1]]


@pytest.mark.learned
@pytest.mark.parametrize("features", ["entity", "word"])
def test_a_separable_toy_set_is_learned(bundle, tmp_path, features):
    model = new_model(bundle, "typing", features, LABELS, settings={"seed": 0})
    assert model.luke.entity_embeddings.entity_embeddings.weight.shape[0] == 2  # [PAD], [MASK]
    texts, spans = [t for t, _, _ in TOY], _spans(TOY)
    assert predict_types(model, bundle.tokenizer, texts, spans) != [g for _, _, g in TOY]  # not right by chance
    toy, gold = (
        collate(_rows(bundle, TOY), pad_id=bundle.tokenizer.pad_id),
        torch.tensor(_golds(TOY), dtype=torch.float),
    )
    history = FineTuner(
        model,
        _rows(bundle, TOY * 4),
        config=FineTuneConfig(learning_rate=3e-3, batch_size=4, epochs=EPOCHS, warmup=0.0),
        work=tmp_path / "work",
        evaluate=lambda m: right_side(m, toy, gold),  # the best-separating epoch is kept
        pad_id=bundle.tokenizer.pad_id,
        identity={"t": features},
    ).train(progress=False)
    assert history[-1]["loss"] < history[0]["loss"]
    # trained to a clear separation, so that the predictions below hold whatever the machine's arithmetic
    assert right_side(model, toy, gold) > MARGIN
    assert predict_types(model, bundle.tokenizer, texts, spans, batch_size=3) == [g for _, _, g in TOY]
    assert predict_types(model, bundle.tokenizer, texts, spans, threshold=1.0) == [[]] * 4  # nothing above 1
    loaded, tok = load_transfer(save_transfer(model, bundle.tokenizer, tmp_path / "typing"))
    assert loaded.task == "typing" and loaded.labels == LABELS and loaded.features == features
    assert predict_types(loaded, tok, texts, spans) == [g for _, _, g in TOY]


def _train(bundle, work, on_step=None):
    model = new_model(bundle, "typing", "entity", LABELS, settings={"seed": 0})
    tuner = FineTuner(
        model,
        _rows(bundle, TOY * 3),
        config=FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=2, save_every=2),
        work=work,
        evaluate=lambda m: 0.5,
        pad_id=bundle.tokenizer.pad_id,
        identity={"t": "typing"},
    )
    return model, tuner.train(progress=False, on_step=on_step)


def test_an_interrupted_typing_run_resumes_to_the_same_weights(bundle, tmp_path):
    reference, _ = _train(bundle, tmp_path / "ref")
    interrupt_at(lambda on_step: _train(bundle, tmp_path / "run", on_step=on_step), 4)
    resumed, history = _train(bundle, tmp_path / "run")
    assert [h["epoch"] for h in history] == [0, 1]
    assert_same_weights(reference, resumed)


def test_loss_is_binary_cross_entropy_over_every_type(bundle):
    model = new_model(bundle, "typing", "word", LABELS, settings={"seed": 1}).eval()
    batch = collate(_rows(bundle, TOY), pad_id=bundle.tokenizer.pad_id)
    logits = model(batch)
    assert logits.shape == (4, 3)
    gold = torch.tensor([[1.0, 0, 1], [1, 0, 1], [0, 1, 0], [0, 1, 0]])
    expected = -(gold * torch.log(torch.sigmoid(logits)) + (1 - gold) * torch.log(1 - torch.sigmoid(logits))).mean()
    assert torch.allclose(model.loss(batch), expected, atol=1e-6)


@pytest.mark.parametrize("eaa", [True, False])
def test_logits_equal_transformers_luke_for_entity_classification(eaa):
    """Same weights, same inputs: our typing head (entity features) and transformers' head give the same logits."""
    from transformers import LukeForEntityClassification

    got, expected = head_logits(LukeForEntityClassification, "typing", [[(1, 3)], [(4, 8)], [(2, 5)]], eaa=eaa)
    assert got.shape == expected.shape == (3, 5)
    print(f"max |logit difference| = {(got - expected).abs().max().item():.2e}")
    assert (got - expected).abs().max().item() < 1e-5


def test_typing_on_an_english_luke_checkpoint(tmp_path):
    """An English LUKE folder (BPE tokenizer, entity-aware attention, encoder only) fine-tunes and reloads."""
    from mluke.models.luke import LukeTokenizer
    from tests.mluke.test_luke import write_luke

    write_luke(tmp_path / "luke", eaa=True, encoder_only=True)
    luke = mluke.load(tmp_path / "luke")
    model = new_model(luke, "typing", "entity", LABELS, settings={"seed": 0})
    assert model.luke.encoder.layer[0].attention.self.use_entity_aware_attention
    texts, spans = [t for t, _, _ in TOY], _spans(TOY)
    (row,) = typing_rows(luke.tokenizer, texts[:1], spans[:1])
    assert luke.tokenizer.decode(row.ids[slice(*row.slots[0])]).strip() == "Paris"
    before = {k: v.clone() for k, v in model.state_dict().items()}
    FineTuner(
        model,
        _rows(luke, TOY * 2),
        config=FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=1),
        work=tmp_path / "work",
        evaluate=lambda m: 0.5,
        pad_id=luke.tokenizer.pad_id,
        identity={"t": "luke"},
    ).train(progress=False)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())  # it trained
    loaded, tok = load_transfer(save_transfer(model, luke.tokenizer, tmp_path / "typing"))
    assert isinstance(tok, LukeTokenizer)
    assert predict_types(loaded, tok, texts, spans) == predict_types(model, luke.tokenizer, texts, spans)
