"""Extractive QA with knowledge-enhanced word features (``features="knowbert"``): a QA row is a pair of texts and
gets the kb mentions of both, each on its own pieces (whole mentions only, across passage windows and question
languages); fine-tuning learns a toy set, saving and loading keeps the predictions, an interrupted run resumes to
the same weights, and ``mluke finetune qa --features knowbert`` / ``mluke evaluate qa`` run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import kb
import mluke
from mluke.finetuning import load_transfer, new_model, save_transfer
from mluke.finetuning.knowledge import attach_knowledge, kb_settings, open_knowbert_bundle
from mluke.finetuning.models import TransferModel
from mluke.finetuning.qa import QaRow, collate_qa, predict_answers, qa_rows
from mluke.knowbert import EntityTable, KnowBertModel
from mluke.models.tokenizer import MlukeTokenizer
from mluke.opening import Mluke
from probes.transfer.readers.qa import QaExample, write_squad
from tests.conftest import write_tiny_db
from tests.mluke.conftest import assert_same_weights, interrupt_at, toy_fine_tune
from tests.mluke.knowbert.test_training import KEYS, LAYER
from tests.mluke.knowbert.test_word_model import knowbert_dir  # noqa: F401  (fixture)

NAMES = {"Tokyo", "Japan", "Copenhagen", "Denmark", "東京", "日本", "Japanese"}
TOY = [
    ("What is the capital of Japan?", "The capital of Japan is Tokyo. Denmark has Copenhagen.", "Tokyo"),
    ("What is the capital of Denmark?", "The capital of Denmark is Copenhagen. Japan has Tokyo.", "Copenhagen"),
]


@pytest.fixture(scope="module")
def qa_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny kb with link statistics for the names of the toy questions (its index keeps only names with a
    link probability, as a real kb's)."""
    path = write_tiny_db(tmp_path_factory.mktemp("qakb") / "tiny.sqlite")
    with kb.EntityDB.update(path) as w:
        for lang, name, key in [
            ("en", "Japan", "Q17"),
            ("en", "Denmark", "Q35"),
            ("en", "Copenhagen", "Q1748"),
            ("ja", "日本", "Q17"),
            ("ja", "東京", "Q1490"),
        ]:
            w.add_anchor(lang, name, key, 50)
            w.add_surface(lang, name, link_docs=40, text_docs=50)
    return path


@pytest.fixture(scope="module")
def bundle(knowbert_dir: Path) -> Mluke:  # noqa: F811
    """The tiny KnowBert model (its word pieces are nearly characters: windows cut mentions)."""
    return open_knowbert_bundle(knowbert_dir)


@pytest.fixture(scope="module")
def demo_knowbert(tmp_path_factory: pytest.TempPathFactory, tiny_demo: Path) -> Path:
    """A KnowBert folder on the tiny demo model (the tiny random checkpoint's word vectors hardly differ between
    positions, too little for a QA head to learn from)."""
    table = EntityTable.from_vectors(torch.randn(len(KEYS), 16, generator=torch.Generator().manual_seed(1)), KEYS)
    torch.manual_seed(0)
    model = KnowBertModel.from_encoder(tiny_demo, entities=table, config=LAYER)
    out = tmp_path_factory.mktemp("qakb") / "knowbert"
    model.save_pretrained(out)
    MlukeTokenizer.from_pretrained(tiny_demo).save_pretrained(out / "tokenizer")
    return out


@pytest.fixture(scope="module")
def demo_bundle(demo_knowbert: Path) -> Mluke:
    return open_knowbert_bundle(demo_knowbert)


def _model(bundle: Mluke, db: Path, seed: int = 0) -> TransferModel:
    settings = {"seed": seed, "knowbert": kb_settings(db)}
    return new_model(bundle, "qa", "knowbert", ["start", "end"], settings=settings)


def _rows(model: TransferModel, bundle: Mluke, items=TOY, **sizes: int) -> list[QaRow]:
    rows = qa_rows(
        bundle.tokenizer,
        [q for q, _, _ in items],
        [c for _, c, _ in items],
        features="knowbert",
        answers=[(c.index(a), c.index(a) + len(a)) for _, c, a in items],
        langs=["en"] * len(items),
        **sizes,
    )
    return attach_knowledge(model, bundle.tokenizer, rows)


def _mentions(tokenizer, row: QaRow) -> tuple[list[str], list[str]]:
    """The decoded pieces of the row's spans in the question and in the passage window."""
    question_end = row.ids.index(tokenizer.eos_id)
    q, p = [], []
    for s, e in row.knowledge.spans:
        (q if e < question_end else p).append(tokenizer.decode(row.ids[s : e + 1]).strip())
        assert e < question_end or row.offsets[s] is not None  # never across the two texts
    return q, p


def test_question_and_passage_mentions_land_on_their_own_pieces(bundle: Mluke, qa_db: Path) -> None:
    tok, table = bundle.tokenizer, bundle.model.entities
    model = _model(bundle, qa_db)
    (row, _) = _rows(model, bundle)
    question, passage = _mentions(tok, row)
    assert question == ["Japan"] and passage == ["Japan", "Tokyo", "Denmark", "Copenhagen"]
    first = row.knowledge.entity_ids
    assert first[0][0] == first[1][0] == table.key_to_row["Q17"]  # Japan in both texts, the same entity
    assert table.key_to_row["Q1490"] in first[2]  # "Tokyo": its candidates, Q1490 among them
    assert len(row.knowledge.spans) == len(row.knowledge.char_spans) == len(row.knowledge.log_prior)
    # each span's characters are in its own text
    (qa, qb), (pa, pb) = row.knowledge.char_spans[0], row.knowledge.char_spans[1]
    assert TOY[0][0][qa:qb] == "Japan" and TOY[0][1][pa:pb] == "Japan"
    batch = collate_qa([row], pad_id=tok.pad_id)
    assert batch["kb_span_start"].tolist() == [[s for s, _ in row.knowledge.spans]]
    assert batch["kb_span_end"].tolist() == [[e for _, e in row.knowledge.spans]]


def test_every_window_gets_the_whole_mentions_it_holds(bundle: Mluke, qa_db: Path) -> None:
    tok = bundle.tokenizer
    model = _model(bundle, qa_db)
    context = " ".join(["Copenhagen and Denmark and Tokyo ."] * 6)
    rows = _rows(model, bundle, [("Where is Japan?", context, "Tokyo")], max_length=24, doc_stride=3)
    assert len(rows) > 5
    cut = found = 0
    names = ("Copenhagen", "Denmark", "Tokyo")
    for row in rows:
        question, passage = _mentions(tok, row)
        assert question == ["Japan"]
        assert set(passage) <= NAMES  # a mention the window cuts is left out, never a fragment
        first = next(o for o in row.offsets if o is not None)[0]
        last = [o for o in row.offsets if o is not None][-1][1]
        at = [(k, n) for n in names for k in _occurrences(context, n)]
        inside = [n for k, n in sorted(at) if first <= k and k + len(n) <= last]
        assert passage == inside  # every whole mention of the window, in the order of its pieces
        found += len(inside)
        cut += any(k < first < k + len(n) or k < last < k + len(n) for k, n in at)
    assert found and cut  # some window boundary falls inside a mention: the case that is left out


def test_a_passage_cut_into_windows_is_looked_up_once(bundle: Mluke, qa_db: Path, monkeypatch) -> None:
    """Every stride window of a passage (and a dev set attached again each epoch) reads the kb's mentions of the
    same texts: they are found once per text, and the windows get the same spans as without the cache."""
    from mluke.finetuning.knowledge import text_candidates

    model = _model(bundle, qa_db)
    context = " ".join(["Copenhagen and Denmark and Tokyo ."] * 6)
    items = [("Where is Japan?", context, "Tokyo")]
    finder = text_candidates(model, bundle.tokenizer)
    looked_up: list[str] = []
    encode = finder.selector.encode
    monkeypatch.setattr(finder.selector, "encode", lambda texts, lang: looked_up.extend(texts) or encode(texts, lang))
    first = _rows(model, bundle, items, max_length=24, doc_stride=3)
    again = _rows(model, bundle, items, max_length=24, doc_stride=3)  # the next epoch's dev rows
    assert len(first) > 5 and sorted(looked_up) == sorted(["Where is Japan?", context])
    assert [r.knowledge.spans for r in again] == [r.knowledge.spans for r in first]
    finder._found.clear()  # without the cache: the same spans and candidates
    fresh = _rows(model, bundle, items, max_length=24, doc_stride=3)
    assert [(r.knowledge.spans, r.knowledge.entity_ids) for r in fresh] == [
        (r.knowledge.spans, r.knowledge.entity_ids) for r in first
    ]


def _occurrences(text: str, name: str) -> list[int]:
    found, at = [], text.find(name)
    while at >= 0:
        found.append(at)
        at = text.find(name, at + 1)
    return found


def test_a_question_in_another_language_is_looked_up_in_its_own(bundle: Mluke, qa_db: Path) -> None:
    tok, table = bundle.tokenizer, bundle.model.entities
    model = _model(bundle, qa_db)
    rows = qa_rows(
        tok,
        ["日本の首都は?"],
        ["The capital of Japan is Tokyo."],
        features="knowbert",
        langs=["en"],
        question_langs=["ja"],
    )
    (row,) = attach_knowledge(model, tok, rows)
    question, passage = _mentions(tok, row)
    assert question == ["日本"] and passage == ["Japan", "Tokyo"]
    assert row.knowledge.entity_ids[0][0] == table.key_to_row["Q17"]
    english = qa_rows(tok, ["日本の首都は?"], ["The capital of Japan is Tokyo."], features="knowbert", langs=["en"])
    (plain,) = attach_knowledge(model, tok, english)  # the question read as English: no Japanese names
    assert _mentions(tok, plain)[0] == []
    with pytest.raises(mluke.MlukeError, match="language"):
        attach_knowledge(model, tok, qa_rows(tok, ["Where?"], ["Tokyo."], features="knowbert"))


def _train(bundle: Mluke, db: Path, work: Path, epochs: int = 6, on_step=None) -> tuple[TransferModel, list]:
    """Fine-tune on the toy set; the dev score is the share of toy questions answered right (the best epoch is
    kept, as in a real run)."""
    model = _model(bundle, db)

    def right(m: TransferModel) -> float:
        return sum(t == a for (t, _), (_, _, a) in zip(_answers(m, bundle.tokenizer), TOY)) / len(TOY)

    options = {"pad_id": bundle.tokenizer.pad_id, "identity": {"t": "qa-knowbert"}, "on_step": on_step}
    history = toy_fine_tune(
        model,
        _rows(model, bundle, TOY * 4),
        work,
        learning_rate=1e-3,
        epochs=epochs,
        save_every=1,
        evaluate=right,
        collate_fn=collate_qa,
        **options,
    )
    return model, history


def _answers(model: TransferModel, tokenizer, items=TOY) -> list[tuple[str, float]]:
    rows = attach_knowledge(
        model,
        tokenizer,
        qa_rows(
            tokenizer,
            [q for q, _, _ in items],
            [c for _, c, _ in items],
            features="knowbert",
            langs=["en"] * len(items),
        ),
    )
    return predict_answers(model, tokenizer, rows, [c for _, c, _ in items])


@pytest.mark.learned
def test_fine_tuning_learns_the_toy_set_and_a_saved_model_answers_the_same(
    demo_bundle: Mluke,
    qa_db: Path,
    tmp_path: Path,
) -> None:
    bundle = demo_bundle
    gold = [a for _, _, a in TOY]
    assert [text for text, _ in _answers(_model(bundle, qa_db), bundle.tokenizer)] != gold  # not right by chance
    table = bundle.model.entities.vectors.clone()
    model, history = _train(bundle, qa_db, tmp_path / "work")
    assert history[-1]["loss"] < history[0]["loss"]
    found = _answers(model, bundle.tokenizer)
    assert [text for text, _ in found] == gold
    assert torch.equal(model.luke.kar.entity_vectors, table)  # the entity table stays frozen
    assert not torch.equal(bundle.model.kar_parameters()[0], model.luke.kar_parameters()[0])  # the layer trained
    out = save_transfer(model, bundle.tokenizer, tmp_path / "qa-kb")
    block = json.loads((out / "config.json").read_text(encoding="utf-8"))["mluke_transfer"]
    assert block["task"] == "qa" and block["features"] == "knowbert"
    assert block["settings"]["knowbert"]["db"] == str(qa_db)
    loaded, tok = load_transfer(out)
    assert loaded.task == "qa" and loaded.features == "knowbert"
    assert_same_weights(model, loaded)
    assert _answers(loaded, tok) == found  # texts and scores


def test_an_interrupted_qa_run_resumes_to_the_same_weights(
    demo_bundle: Mluke,
    qa_db: Path,
    tmp_path: Path,
) -> None:
    bundle = demo_bundle
    reference, _ = _train(bundle, qa_db, tmp_path / "ref", epochs=2)
    interrupt_at(lambda on_step: _train(bundle, qa_db, tmp_path / "run", epochs=2, on_step=on_step), 3)
    resumed, history = _train(bundle, qa_db, tmp_path / "run", epochs=2)
    assert [h["epoch"] for h in history] == [0, 1]
    assert_same_weights(reference, resumed)


def test_knowbert_qa_needs_a_knowbert_model(tiny_checkpoint: Path) -> None:
    bundle = mluke.load(tiny_checkpoint)
    with pytest.raises(mluke.MlukeError, match="KnowBert model"):
        new_model(bundle, "qa", "knowbert", ["start", "end"])
    with pytest.raises(mluke.MlukeError, match="KnowBert model folder"):
        open_knowbert_bundle(tiny_checkpoint)


def test_cli_finetune_and_evaluate_qa_with_knowbert_features(
    cli,
    knowbert_dir: Path,  # noqa: F811
    qa_db: Path,
    tmp_path: Path,
) -> None:
    examples = [QaExample(f"q{i}", q, c, ((c.index(a), a),), lang="en") for i, (q, c, a) in enumerate(TOY * 2)]
    train = tmp_path / "train.json"
    write_squad(examples, train)
    xquad = tmp_path / "xquad"
    xquad.mkdir()
    write_squad(examples, xquad / "xquad.en.json")
    out = tmp_path / "qa-kb"
    finetune = cli.bind("finetune", "qa", features="knowbert", model=knowbert_dir, db=qa_db)
    fast = {"epochs": "1", "batch_size": "4", "learning_rate": "1e-3", "no_progress": True}
    res = finetune("-o", out, train=train, dev=train, **fast)
    assert res.exit_code == 0, res.output
    assert (out / "knowbert" / "knowbert.json").is_file()
    res = cli("evaluate", "qa", out, xquad=xquad, db=qa_db, json=tmp_path / "r.json", no_progress=True)
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["features"] == "knowbert" and saved["languages"][0]["questions"] == len(examples)
    res = cli("finetune", "qa", "-o", tmp_path / "qa-bad", train=train, dev=train, features="knowbert", **fast)
    assert res.exit_code != 0 and "KnowBert model folder" in str(res.exception or res.output)
