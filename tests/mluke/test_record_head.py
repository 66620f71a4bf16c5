"""The ReCoRD head (mluke.finetuning, task "record"): rows with the placeholder and every mention as slots, what the
cut loses, learning a separable toy set, binary cross-entropy over the mentions, resuming, checkpoints."""

import pytest
import torch

import mluke
from mluke.finetuning import FineTuneConfig, FineTuner, load_transfer, new_model, predict_record, save_transfer
from mluke.finetuning.inputs import collate
from mluke.finetuning.record import ClozeQuery, best_mentions, record_rows
from tests.mluke.conftest import assert_same_weights, interrupt_at

# (passage, mentions, query, answer): the answer is the city when the query asks for a city, else the person.
PASSAGES = ["Paris met Bob there .", "Tom saw Rome once .", "Lima knows Ann well .", "Eve left Oslo today ."]
CITIES = {"Paris", "Rome", "Lima", "Oslo"}
TOY = [
    (p, [w for w in p.split() if w[0].isupper()], query, kind)
    for p in PASSAGES
    for query, kind in (("@placeholder is a city .", "city"), ("@placeholder is a person .", "person"))
]


def _items(items, with_labels=True):
    out = []
    for passage, names, query, kind in items:
        at = query.index("@placeholder")
        mentions = tuple((passage.index(m), passage.index(m) + len(m)) for m in names)
        labels = tuple(int((m in CITIES) == (kind == "city")) for m in names) if with_labels else None
        out.append(ClozeQuery(query, (at, at + 12), passage, mentions, labels))
    return out


@pytest.fixture(scope="module")
def bundle(tiny_demo):
    return mluke.load(tiny_demo)


def _rows(bundle, items, **sizes):
    return record_rows(bundle.tokenizer, _items(items), **sizes)


def test_rows_hold_the_placeholder_then_every_mention(bundle):
    inputs = _rows(bundle, TOY[:1])
    (row,) = inputs.rows
    tok = bundle.tokenizer
    assert row.ids[0] == tok.bos_id and row.ids[-1] == tok.eos_id
    assert row.items == [0, 0, 1] and row.labels == [-100, 1, 0] and row.entity_ids == [1, 1, 1]
    pieces = [tok.words.decode(row.ids[s:e]).strip() for s, e in row.slots]
    alone = [
        tok.words.decode(tok.words.encode(w, add_special_tokens=False).ids).strip() for w in ("@placeholder", "Bob")
    ]
    assert pieces == [alone[0], "Paris", alone[1]] and row.slots[0][0] == 1  # (the tiny vocabulary lacks "@", "c")
    assert row.ids[row.slots[1][0] - 2 : row.slots[1][0]] == [tok.eos_id, tok.eos_id]
    assert inputs.counts() == {"queries": 1, "mentions": 2, "mentions_dropped": 0, "answers_lost": 0}


def test_what_the_cut_loses_is_counted(bundle):
    # one entity slot after the placeholder: "Bob" is dropped; a row too short for "Bob" drops it too
    assert _rows(bundle, TOY[:2], max_entities=2).counts()["mentions_dropped"] == 2
    # the second query's answer (Bob) is dropped: that query cannot be answered right
    assert _rows(bundle, TOY[:2], max_entities=2).answers_lost == 1
    bob_end = _rows(bundle, TOY[:1]).rows[0].slots[2][1]
    short = _rows(bundle, TOY[:1], max_length=bob_end)  # room for the pieces before Bob's last, and </s>
    assert short.mentions_dropped == 1 and short.rows[0].items == [0, 0]


def test_best_mentions_takes_the_highest_score_of_the_kept_slots(bundle):
    rows = _rows(bundle, TOY[:2]).rows
    assert best_mentions(rows, [torch.tensor([0.1, 0.9, 5.0]), torch.tensor([2.0, -1.0])]) == [1, 0]


def test_loss_is_binary_cross_entropy_over_the_mention_slots(bundle):
    model = new_model(bundle, "record", "word", ["answer"], settings={"seed": 1}).eval()
    batch = collate(_rows(bundle, TOY[:3]).rows, pad_id=bundle.tokenizer.pad_id)
    logits = model(batch)
    assert logits.shape == (3, 2)
    gold = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])  # Tom saw Rome: city -> Rome (slot 2)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(logits, gold)
    assert torch.allclose(model.loss(batch), expected)


def _tuner(bundle, features, work, *, copies, evaluate, **config):
    """A seeded run on ``copies`` copies of the toy set (the model is ``tuner.model``)."""
    model = new_model(bundle, "record", features, ["answer"], settings={"seed": 0})
    rows = _rows(bundle, TOY * copies).rows
    settings = FineTuneConfig(batch_size=4, **config)
    pad = bundle.tokenizer.pad_id
    return FineTuner(model, rows, config=settings, work=work, evaluate=evaluate, pad_id=pad, identity={"t": features})


@pytest.mark.learned
@pytest.mark.parametrize("features", ["entity", "word"])
def test_a_separable_toy_set_is_learned(bundle, tmp_path, features):
    items = _items(TOY, with_labels=False)
    expected = [q.mentions[q.labels.index(1)] for q in _items(TOY)]

    def accuracy(m):
        chosen = predict_record(m, bundle.tokenizer, items, batch_size=3)[0]
        return sum(c == e for c, e in zip(chosen, expected)) / len(expected)

    tuner = _tuner(
        bundle, features, tmp_path / "work", copies=3, evaluate=accuracy, learning_rate=5e-3, epochs=10, dropout=0.0
    )
    model = tuner.model
    assert accuracy(model) < 1  # not right by chance
    history = tuner.train(progress=False)
    assert history[-1]["loss"] < history[0]["loss"] and max(h["dev"] for h in history) == 1.0
    chosen, counts = predict_record(model, bundle.tokenizer, items, batch_size=3)
    assert chosen == expected and counts["mentions_dropped"] == 0
    loaded, tok = load_transfer(save_transfer(model, bundle.tokenizer, tmp_path / "record"))
    assert loaded.task == "record" and loaded.features == features
    assert predict_record(loaded, tok, items)[0] == expected


def test_an_interrupted_record_run_resumes_to_the_same_weights(bundle, tmp_path):
    def run(work, on_step=None):
        tuner = _tuner(
            bundle, "entity", work, copies=2, evaluate=lambda m: 0.5, learning_rate=1e-3, epochs=2, save_every=2
        )
        return tuner.model, tuner.train(progress=False, on_step=on_step)

    reference, _ = run(tmp_path / "ref")
    interrupt_at(lambda on_step: run(tmp_path / "run", on_step), 3)
    resumed, history = run(tmp_path / "run")
    assert [h["epoch"] for h in history] == [0, 1]
    assert_same_weights(reference, resumed)


def test_a_batch_whose_mentions_were_all_cut_off_adds_no_loss(bundle):
    model = new_model(bundle, "record", "entity", ["answer"], settings={"seed": 1}).eval()
    paris = _rows(bundle, TOY[:1]).rows[0].slots[1]
    inputs = _rows(bundle, TOY[:1], max_length=paris[1])  # Paris, the first mention, ends one piece too late
    assert inputs.rows[0].items == [0] and inputs.answers_lost == 1
    loss = model.loss(collate(inputs.rows, pad_id=bundle.tokenizer.pad_id))
    assert float(loss.detach()) == 0.0 and loss.requires_grad
