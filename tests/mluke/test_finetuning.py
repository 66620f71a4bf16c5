"""Fine-tuning heads, the training loop, checkpoints and decoding (mluke.finetuning)."""

import dataclasses
import shutil

import pytest
import torch

import mluke
from mluke.finetuning import (
    FineTuneConfig,
    FineTuner,
    decode_spans,
    load_transfer,
    new_model,
    predict_relations,
    predict_spans,
    save_transfer,
)
from mluke.finetuning.inputs import collate, join_words, ner_rows, relation_rows
from tests.mluke.conftest import assert_same_weights, interrupt_at

SENTENCES = [["Paris", "is", "in", "France", "."], ["東", "京", "は", "日", "本", "に", "あ", "る"]]
LANGS = ["en", "ja"]
GOLD = [[(0, 1, "CITY"), (3, 4, "COUNTRY")], [(0, 2, "CITY"), (3, 5, "COUNTRY")]]
LABELS = ["O", "CITY", "COUNTRY"]


@pytest.fixture(scope="module")
def bundle(tiny_demo):
    return mluke.load(tiny_demo)


def test_spans_cover_whole_words_up_to_the_piece_limit(bundle):
    tok = bundle.tokenizer
    assert join_words(["東", "京"], "ja") == ("東京", [(0, 1), (1, 2)])
    rows = ner_rows(
        tok,
        SENTENCES,
        LANGS,
        features="entity",
        max_span_pieces=4,
        max_entities=4,
        gold=GOLD,
        label_ids={l: i for i, l in enumerate(LABELS)},
    )
    items = [(n, i, j) for r in rows for n, i, j in r.items]
    assert len(items) == len(set(items)) and all(len(r.slots) <= 4 for r in rows)  # several passes per sentence
    assert (0, 0, 1) in items and (0, 3, 4) in items and (1, 0, 2) in items
    labelled = {it: lab for r in rows for it, lab in zip(r.items, r.labels) if lab}
    assert labelled == {(0, 0, 1): 1, (0, 3, 4): 2, (1, 0, 2): 1, (1, 3, 5): 2}
    pieces = {(n, i): r.ids[s:e] for r in rows for (s, e), (n, i, j) in zip(r.slots, r.items) if j == i + 1}
    for r in rows:
        for (s, e), (n, i, j) in zip(r.slots, r.items):  # a span is its words' pieces, whole
            assert e - s <= 4 and r.ids[s:e] == [p for w in range(i, j) for p in pieces[(n, w)]]
    assert tok.decode(pieces[(0, 3)]).strip() == "France"
    word = ner_rows(tok, SENTENCES, LANGS, features="word", max_span_pieces=4)
    assert len(word) == 2 and sorted(it for r in word for it in r.items) == sorted(items)
    batch = collate(rows, pad_id=tok.pad_id)
    assert batch["entity_position_ids"].shape[-1] <= 4 and (batch["labels"][~batch["slot_mask"]] == -100).all()


def test_relation_inputs_put_markers_or_entities_on_the_mentions(bundle):
    tok = bundle.tokenizer
    text = "France borders Spain ."
    word = relation_rows(tok, [text], [((15, 20), (0, 6))], features="word", labels=[1])[0]
    (h, _), (t, _) = word.slots
    assert word.ids[h] == tok.ent_id and word.ids[t] == tok.ent2_id and t < h  # the tail comes first here
    ent = relation_rows(tok, [text], [((15, 20), (0, 6))], features="entity")[0]
    assert ent.entity_ids == [1, 2] and tok.decode(ent.ids[slice(*ent.slots[1])]).strip() == "France"


@pytest.mark.parametrize("task, features", [("ner", "entity"), ("ner", "word"), ("re", "entity"), ("re", "word")])
def test_heads_and_a_small_entity_table(bundle, task, features):
    labels = LABELS if task == "ner" else ["no_relation", "borders(e1,e2)"]
    model = new_model(bundle, task, features, labels, settings={"seed": 3})
    table = model.luke.entity_embeddings.entity_embeddings.weight
    mask = bundle.model.luke.entity_embeddings.entity_embeddings.weight[bundle.entity_vocab.mask_id]
    assert table.shape[0] == (2 if task == "ner" else 3) and torch.equal(table[1], mask)
    again = new_model(bundle, task, features, labels, settings={"seed": 3})
    assert torch.equal(model.classifier.weight, again.classifier.weight)  # seeded
    tok = bundle.tokenizer
    if task == "ner":
        rows = ner_rows(tok, SENTENCES, LANGS, features=features)
        width = max(len(r.slots) for r in rows)
        assert model(collate(rows, pad_id=tok.pad_id)).shape == (len(rows), width, 3)
    else:
        rows = relation_rows(tok, ["France borders Spain ."], [((0, 6), (15, 20))], features=features, labels=[1])
        assert model(collate(rows, pad_id=tok.pad_id)).shape == (1, 2)


@pytest.mark.parametrize("features", ["entity", "word"])
def test_batched_predictions_match_one_at_a_time(bundle, features):
    """Predictions batch rows sorted by size (less padding); each answer must still go to its own input."""
    tok = bundle.tokenizer
    ner = new_model(bundle, "ner", features, LABELS, settings={"seed": 5})
    rel = new_model(bundle, "re", features, ["no_relation", "borders(e1,e2)", "borders(e2,e1)"], settings={"seed": 5})
    with torch.no_grad():  # a random classifier with large weights, so that the labels vary
        for model in (ner, rel):
            model.classifier.weight.normal_(0, 5.0, generator=torch.Generator().manual_seed(0))
    sentences = [*SENTENCES, ["Spain", "borders", "France", "and", "Portugal", "."], ["Berlin"]]
    langs = [*LANGS, "en", "de"]
    batched = predict_spans(ner, tok, sentences, langs, batch_size=3)
    assert any(batched) and batched == [predict_spans(ner, tok, [s], [l])[0] for s, l in zip(sentences, langs)]
    texts = [
        "France borders Spain .",
        "Spain , a country next to France , borders Portugal and Andorra .",
        "A B",
        "Tokyo is the capital of Japan .",
        "Paris ( France )",
    ]
    mentions = [("France", "Spain"), ("Spain", "France"), ("A", "B"), ("Tokyo", "Japan"), ("Paris", "France")]
    pairs = [
        ((t.index(h), t.index(h) + len(h)), (t.index(m), t.index(m) + len(m))) for t, (h, m) in zip(texts, mentions)
    ]
    for seed in range(20):  # the first random classifier whose labels vary on these inputs (the demo model
        # trained under transformers 4.x starts from other random weights than under 5.x, so no one seed fits both)
        with torch.no_grad():
            rel.classifier.weight.normal_(0, 5.0, generator=torch.Generator().manual_seed(seed))
        one_by_one = [predict_relations(rel, tok, [t], [p])[0] for t, p in zip(texts, pairs)]
        if len(set(one_by_one)) > 1:
            break
    assert len(set(one_by_one)) > 1 and predict_relations(rel, tok, texts, pairs, batch_size=2) == one_by_one


def test_greedy_decoding_keeps_the_best_non_overlapping_spans():
    assert decode_spans([(0, 2, 1, 0.9), (1, 3, 2, 0.95), (3, 4, 1, 0.5), (0, 1, 2, 0.4)]) == [
        (0, 1, 2),
        (1, 3, 2),
        (3, 4, 1),
    ]


def _train(bundle, work, features="entity", on_step=None, epochs=2):
    model = new_model(bundle, "ner", features, LABELS, settings={"seed": 0, "max_entities": 4})
    rows = ner_rows(
        bundle.tokenizer,
        SENTENCES * 6,
        LANGS * 6,
        features=features,
        max_entities=4,
        gold=GOLD * 6,
        label_ids={l: i for i, l in enumerate(LABELS)},
    )
    scores = iter([0.2, 0.7, 0.5])
    tuner = FineTuner(
        model,
        rows,
        config=FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=epochs, save_every=2, max_entities=4),
        work=work,
        evaluate=lambda m: next(scores),
        pad_id=bundle.tokenizer.pad_id,
        identity={"t": 1},
    )
    return model, tuner.train(progress=False, on_step=on_step)


def test_an_interrupted_run_resumes_to_the_same_weights(bundle, tmp_path, capsys):
    reference, history = _train(bundle, tmp_path / "ref")
    assert [h["epoch"] for h in history] == [0, 1] and history[1]["dev"] == 0.7
    interrupt_at(lambda on_step: _train(bundle, tmp_path / "run", on_step=on_step), 5)
    capsys.readouterr()
    resumed, _ = _train(bundle, tmp_path / "run")
    assert "Resuming the interrupted fine-tuning run in" in capsys.readouterr().err  # says so
    assert_same_weights(reference, resumed)
    with pytest.raises(mluke.MlukeError, match="other data or settings.*restart") as err:
        _train(bundle, tmp_path / "run", epochs=3)
    assert "(changed: epochs was 2)" in str(err.value)  # which setting changed
    assert "(changed: --epochs was 2)" in err.value.for_cli() and "--restart" in err.value.for_cli()


def test_ctrl_c_says_which_checkpoint_is_kept_and_that_a_rerun_resumes(bundle, tmp_path, capsys):
    def ctrl_c_at(step):
        def on_step(done):
            if done == step:
                raise KeyboardInterrupt

        return on_step

    with pytest.raises(KeyboardInterrupt):
        _train(bundle, tmp_path / "early", on_step=ctrl_c_at(1))
    assert "Interrupted at step 1 of " in capsys.readouterr().err  # before any checkpoint: says so
    with pytest.raises(KeyboardInterrupt):
        _train(bundle, tmp_path / "run", on_step=ctrl_c_at(5))  # checkpoints every 2 steps
    err = capsys.readouterr().err
    assert "Interrupted at step 5 of " in err and f"the checkpoint of step 4 is kept in {tmp_path / 'run'}" in err
    assert "the next run with the same data and settings resumes from it" in err
    _train(bundle, tmp_path / "run")
    assert f"Resuming the interrupted fine-tuning run in {tmp_path / 'run'} at step 4 of" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("learning_rate", float("nan"), "expected a finite number above 0"),
        ("learning_rate", float("inf"), "expected a finite number above 0"),
        ("learning_rate", 0, "expected a finite number above 0"),
        ("learning_rate", -1e-5, "expected a finite number above 0"),
        ("weight_decay", float("nan"), "expected a finite number of at least 0"),
        ("warmup", 1.0, "expected a number from 0 to 1"),
        ("warmup", -0.1, "expected a number from 0 to 1"),
        ("dropout", float("nan"), "expected a number from 0 to 1"),
        ("epochs", 0, "expected a whole number of at least 1"),
        ("epochs", 2.5, "expected a whole number of at least 1"),
        ("batch_size", -4, "expected a whole number of at least 1"),
        ("save_every", 0, "expected a whole number of at least 1"),
    ],
)
def test_a_meaningless_setting_is_refused_where_the_config_is_made(field, value, expected):
    """A ValueError that names the field, in Python's spelling and, for the command line, as its flag."""
    with pytest.raises(ValueError, match=rf"^{field}={value!r}: {expected}") as err:
        FineTuneConfig(**{field: value})
    assert isinstance(err.value, mluke.MlukeError)
    assert err.value.for_cli().startswith(f"--{field.replace('_', '-')} {value}: {expected}")
    with pytest.raises(ValueError, match=rf"^{field}="):  # a copy with a changed field is checked too
        dataclasses.replace(FineTuneConfig(), **{field: value})


def test_checkpoints_keep_weights_labels_and_predictions(bundle, tmp_path):
    model, _ = _train(bundle, tmp_path / "work", features="word", epochs=1)
    out = save_transfer(model, bundle.tokenizer, tmp_path / "ner-w")
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    loaded, tok = load_transfer(out)
    assert loaded.labels == LABELS and loaded.features == "word" and loaded.task == "ner"
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name
    assert predict_spans(loaded, tok, SENTENCES, LANGS) == predict_spans(model, bundle.tokenizer, SENTENCES, LANGS)
    with pytest.raises(mluke.MlukeError, match="already exists"):
        save_transfer(model, bundle.tokenizer, out)
    shutil.copytree(out, tmp_path / "broken")
    (tmp_path / "broken" / "model.safetensors").unlink()
    with pytest.raises(mluke.errors.InputFormatError, match="no model.safetensors"):
        load_transfer(tmp_path / "broken")
