"""Fine-tuning with knowledge-enhanced word features (``features="knowbert"``): rows carry their kb spans and
candidates, a toy typing set is learned with the entity table untouched, an interrupted run resumes to the same
weights, and a saved model reads back (``mluke evaluate``'s path) with the same weights and predictions."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import mluke
from mluke.finetuning import load_transfer, new_model, predict_types, save_transfer
from mluke.finetuning.inputs import Row, collate, typing_rows
from mluke.finetuning.knowledge import attach_knowledge, kb_settings, open_knowbert_bundle
from mluke.finetuning.models import TransferModel
from mluke.opening import Mluke
from tests.mluke.conftest import assert_same_weights, interrupt_at, right_side, toy_fine_tune
from tests.mluke.knowbert.test_word_model import knowbert_dir, tiny_db_path  # noqa: F401  (fixtures)
from tests.mluke.test_typing_head import EPOCHS, MARGIN

LABELS = ["location", "person"]
TOY = [
    ("The city of Tokyo is big .", "Tokyo", ["location"]),
    ("We flew to Tokyo last year .", "Tokyo", ["location"]),
    ("A man called Bob said hello .", "Bob", ["person"]),
    ("A woman called Ann said hi .", "Ann", ["person"]),
]
TEXTS = [t for t, _, _ in TOY]
SPANS = [(t.index(m), t.index(m) + len(m)) for t, m, _ in TOY]
GOLD = [g for _, _, g in TOY]


@pytest.fixture(scope="module")
def bundle(knowbert_dir: Path) -> Mluke:  # noqa: F811
    return open_knowbert_bundle(knowbert_dir)


def _model(bundle: Mluke, db: Path) -> TransferModel:
    return new_model(bundle, "typing", "knowbert", LABELS, settings={"seed": 0, "knowbert": kb_settings(db)})


def _rows(model: TransferModel, bundle: Mluke, items: list[tuple[str, str, list[str]]]) -> list[Row]:
    texts = [t for t, _, _ in items]
    spans = [(t.index(m), t.index(m) + len(m)) for t, m, _ in items]
    golds = [[int(l in g) for l in LABELS] for _, _, g in items]
    rows = typing_rows(bundle.tokenizer, texts, spans, labels=golds, langs=["en"] * len(items))
    return attach_knowledge(model, bundle.tokenizer, rows)


def _train(bundle: Mluke, db: Path, work: Path, epochs: int = 6, on_step=None, **given) -> tuple[TransferModel, list]:
    model = _model(bundle, db)
    rows = _rows(model, bundle, TOY * 4)
    options = {"pad_id": bundle.tokenizer.pad_id, "identity": {"t": "knowbert"}, "on_step": on_step} | given
    return model, toy_fine_tune(model, rows, work, learning_rate=3e-3, epochs=epochs, save_every=2, **options)


def test_rows_carry_the_texts_kb_spans_and_the_batch_their_candidates(bundle: Mluke, tiny_db_path: Path) -> None:  # noqa: F811
    model = _model(bundle, tiny_db_path)
    rows = _rows(model, bundle, TOY)
    tokyo = rows[0].knowledge
    table = bundle.model.entities
    assert len(tokyo.spans) == 1 and tokyo.entity_ids[0][0] == table.key_to_row["Q1490"]
    (s, e) = tokyo.spans[0]
    assert bundle.tokenizer.decode(rows[0].ids[s : e + 1]).strip() == "Tokyo"  # on the row's own pieces
    assert rows[2].knowledge.spans == []  # "Bob": no kb name
    batch = collate(rows, pad_id=bundle.tokenizer.pad_id)
    assert batch["kb_span_start"].shape == (4, 1) and batch["kb_span_mask"].tolist() == [
        [True],
        [True],
        [False],
        [False],
    ]
    # the word path of the same rows without the layer's inputs: different features (the layer is on)
    plain = {k: v for k, v in batch.items() if not k.startswith("kb_")}
    model.eval()
    assert not torch.equal(model.features_of(batch), model.features_of(plain))


@pytest.mark.learned
def test_a_toy_typing_set_is_learned_with_the_entity_table_frozen(
    bundle: Mluke,
    tiny_db_path: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    table = bundle.model.entities.vectors.clone()
    model = _model(bundle, tiny_db_path)
    assert predict_types(model, bundle.tokenizer, TEXTS, SPANS, langs=["en"] * 4) != GOLD  # not right by chance
    toy = collate(_rows(model, bundle, TOY), pad_id=bundle.tokenizer.pad_id)
    gold = torch.tensor([[float(l in g) for l in LABELS] for g in GOLD])
    # the best-separating epoch is kept: trained to a clear separation, the predictions hold whatever the arithmetic
    model, history = _train(
        bundle, tiny_db_path, tmp_path / "work", epochs=2 * EPOCHS, evaluate=lambda m: right_side(m, toy, gold)
    )
    assert history[-1]["loss"] < history[0]["loss"]
    assert right_side(model, toy, gold) > MARGIN
    assert predict_types(model, bundle.tokenizer, TEXTS, SPANS, langs=["en"] * 4) == GOLD
    assert torch.equal(model.luke.kar.entity_vectors, table) and torch.equal(bundle.model.entities.vectors, table)
    assert not any("entity_vectors" in name for name, _ in model.named_parameters())
    before = bundle.model.kar_parameters()[0]
    assert not torch.equal(before, model.luke.kar_parameters()[0])  # the copy trained, the pretrained model did not
    # saved and read back as `mluke evaluate` reads it: same weights, same predictions
    out = save_transfer(model, bundle.tokenizer, tmp_path / "typing-kb")
    block = json.loads((out / "config.json").read_text(encoding="utf-8"))["mluke_transfer"]
    assert block["features"] == "knowbert" and block["settings"]["knowbert"]["db"] == str(tiny_db_path)
    assert (out / "knowbert" / "knowbert.json").is_file()
    loaded, tok = load_transfer(out)
    assert loaded.features == "knowbert" and loaded.task == "typing"
    assert_same_weights(model, loaded)
    assert predict_types(loaded, tok, TEXTS, SPANS, langs=["en"] * 4) == GOLD
    with pytest.raises(mluke.MlukeError, match="language"):
        predict_types(loaded, tok, TEXTS, SPANS)  # no language: the mention index cannot look


def test_an_interrupted_knowbert_run_resumes_to_the_same_weights(
    bundle: Mluke,
    tiny_db_path: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    reference, _ = _train(bundle, tiny_db_path, tmp_path / "ref", epochs=2)
    interrupt_at(lambda on_step: _train(bundle, tiny_db_path, tmp_path / "run", epochs=2, on_step=on_step), 3)
    resumed, history = _train(bundle, tiny_db_path, tmp_path / "run", epochs=2)
    assert [h["epoch"] for h in history] == [0, 1]
    assert_same_weights(reference, resumed)


def test_knowbert_features_need_a_knowbert_folder(bundle: Mluke, tiny_checkpoint: Path) -> None:
    with pytest.raises(mluke.MlukeError, match="KnowBert model folder"):
        open_knowbert_bundle(tiny_checkpoint)
    with pytest.raises(mluke.MlukeError, match="need a KnowBert model"):
        new_model(mluke.load(tiny_checkpoint), "typing", "knowbert", LABELS)
    words = bundle.model.encoder.config.vocab_size  # an encoder without <ent>/<ent2> (XLM-R's 250,002 pieces)
    no_markers = Mluke(bundle.model, SimpleNamespace(ent_id=words, ent2_id=words + 1), None)  # type: ignore[arg-type]
    with pytest.raises(mluke.MlukeError, match="<ent>/<ent2>"):
        new_model(no_markers, "re", "knowbert", ["no_relation", "capital"])


def test_cli_finetune_and_evaluate_typing_with_knowbert_features(
    cli,
    knowbert_dir: Path,  # noqa: F811
    tiny_db_path: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    records = [{"sent": t, "start": s, "end": e, "labels": g} for (t, _, g), (s, e) in zip(TOY, SPANS)]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in records * 2), encoding="utf-8")
    out = tmp_path / "typing-kb"
    finetune = cli.bind("finetune", "typing", features="knowbert", model=knowbert_dir, db=tiny_db_path, lang="en")
    fast = {"epochs": "1", "batch_size": "4", "learning_rate": "1e-3", "no_progress": True}
    res = finetune("-o", out, train=train, dev=train, **fast)
    assert res.exit_code == 0, res.output
    assert "fine-tuned typing (knowbert features)" in res.output
    res = cli("evaluate", "typing", out, test=[f"en:{train}"], json=tmp_path / "r.json", no_progress=True)
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["features"] == "knowbert" and saved["languages"][0]["examples"] == 8


def test_ner_and_relation_rows_get_spans_on_their_own_pieces(bundle: Mluke, tiny_db_path: Path) -> None:  # noqa: F811
    from mluke.finetuning import predict_relations, predict_spans
    from mluke.finetuning.inputs import ner_rows, relation_rows

    tok = bundle.tokenizer
    settings = {"knowbert": kb_settings(tiny_db_path)}
    ner = new_model(bundle, "ner", "knowbert", ["O", "LOC"], settings=settings)
    words = [["We", "saw", "Tokyo", "."]]
    (row,) = attach_knowledge(ner, tok, ner_rows(tok, words, ["en"], features="knowbert"))
    (s, e) = row.knowledge.spans[0]
    assert tok.decode(row.ids[s : e + 1]).strip() == "Tokyo"
    assert len(predict_spans(ner, tok, words, ["en"])) == 1
    re_model = new_model(bundle, "re", "knowbert", ["no_relation", "capital"], settings=settings)
    text = "Tokyo is in Japan ."
    pairs = [((0, 5), (12, 17))]
    (rel,) = attach_knowledge(re_model, tok, relation_rows(tok, [text], pairs, features="word", langs=["en"]))
    (s, e) = rel.knowledge.spans[0]
    assert rel.ids[s - 1] == tok.ent_id and tok.decode(rel.ids[s : e + 1]).strip() == "Tokyo"  # inside the markers
    assert predict_relations(re_model, tok, [text], pairs, langs=["en"])[0] in ("no_relation", "capital")
