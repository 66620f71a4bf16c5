"""ReCoRD with knowledge-enhanced word features (``features="knowbert"``): a ReCoRD row is a pair (query and
passage, as a QA window) and gets the kb mentions of both, each on its own pieces (whole mentions only, where the
query or the passage is cut); fine-tuning learns a toy set, saving and loading keeps the predictions, an
interrupted run resumes to the same weights, and ``mluke finetune record --features knowbert`` / ``mluke evaluate
record`` run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import mluke
from mluke.finetuning import load_transfer, new_model, predict_record, save_transfer
from mluke.finetuning.inputs import collate
from mluke.finetuning.knowledge import attach_knowledge, kb_settings
from mluke.finetuning.models import TransferModel
from mluke.finetuning.record import ClozeQuery, RecordRow, record_rows
from mluke.opening import Mluke
from probes.transfer.readers.record import RecordExample, write_record
from tests.mluke.conftest import assert_resumes, assert_same_weights, toy_fine_tune
from tests.mluke.finetuning.test_qa_knowbert import bundle, demo_bundle, demo_knowbert, qa_db  # noqa: F401
from tests.mluke.knowbert.test_word_model import knowbert_dir  # noqa: F401  (fixture)

PH = "@placeholder"


def _query(query: str, passage: str, names: list[str], answer: str | None = None, lang: str = "en") -> ClozeQuery:
    """A cloze query whose passage mentions are the first occurrence of each of ``names``."""
    at = query.index(PH)
    mentions = tuple(sorted((passage.index(n), passage.index(n) + len(n)) for n in names))
    labels = tuple(int(passage[s:e] == answer) for s, e in mentions) if answer is not None else None
    return ClozeQuery(query, (at, at + len(PH)), passage, mentions, labels, lang)


TOY = [
    _query(f"{PH} is the capital of {country}.", passage, ["Tokyo", "Copenhagen"], answer)
    for country, answer in [("Japan", "Tokyo"), ("Denmark", "Copenhagen")]
    for passage in ("Tokyo is a city. Copenhagen is a city.", "Copenhagen is a city. Tokyo is a city.")
]


def _model(bundle: Mluke, db: Path) -> TransferModel:  # noqa: F811
    return new_model(bundle, "record", "knowbert", ["answer"], settings={"seed": 0, "knowbert": kb_settings(db)})


def _rows(model: TransferModel, bundle: Mluke, items=TOY, **sizes: int) -> list[RecordRow]:  # noqa: F811
    return attach_knowledge(model, bundle.tokenizer, record_rows(bundle.tokenizer, items, **sizes).rows)


def _mentions(tokenizer, row: RecordRow) -> tuple[list[str], list[str]]:
    """The decoded pieces of the row's kb spans in the query and in the passage."""
    query_end = row.ids.index(tokenizer.eos_id)
    q, p = [], []
    for s, e in row.knowledge.spans:
        assert e < query_end or s > query_end + 1  # never across the two texts
        (q if e < query_end else p).append(tokenizer.decode(row.ids[s : e + 1]).strip())
    return q, p


def test_query_and_passage_mentions_land_on_their_own_pieces(bundle: Mluke, qa_db: Path) -> None:  # noqa: F811
    tok, table = bundle.tokenizer, bundle.model.entities
    model = _model(bundle, qa_db)
    item = _query(f"{PH} is the capital of Japan.", "Japan has Tokyo. Denmark has Copenhagen.", ["Tokyo"], "Tokyo")
    (row,) = _rows(model, bundle, [item])
    query, passage = _mentions(tok, row)
    assert query == ["Japan"] and passage == ["Japan", "Tokyo", "Denmark", "Copenhagen"]
    ids = row.knowledge.entity_ids
    assert ids[0][0] == ids[1][0] == table.key_to_row["Q17"]  # Japan in both texts, the same entity
    (qa, qb), (pa, pb) = row.knowledge.char_spans[0], row.knowledge.char_spans[1]
    assert item.query[qa:qb] == "Japan" and item.passage[pa:pb] == "Japan"  # characters of its own text
    batch = collate([row], pad_id=tok.pad_id)
    assert batch["kb_span_start"].tolist() == [[s for s, _ in row.knowledge.spans]]
    assert batch["kb_span_end"].tolist() == [[e for _, e in row.knowledge.spans]]
    assert row.slots[0] == (1, 1 + len(tok.words.encode(PH, add_special_tokens=False).ids))  # placeholder: slot 0


def test_cut_query_and_passage_keep_only_whole_mentions(bundle: Mluke, qa_db: Path) -> None:  # noqa: F811
    tok = bundle.tokenizer
    model = _model(bundle, qa_db)
    item = _query(f"Denmark and Japan and {PH} .", "Tokyo and Denmark and Copenhagen and Japan .", ["Tokyo", "Japan"])
    (whole,) = _rows(model, bundle, [item])
    assert _mentions(tok, whole) == (["Denmark", "Japan"], ["Tokyo", "Denmark", "Copenhagen", "Japan"])
    length = len(whole.ids)
    seen = set()
    for cut in range(1, 30):  # the query keeps the pieces around its placeholder, the passage its first pieces
        (row,) = _rows(model, bundle, [item], max_query_length=16 + cut, max_length=length - cut)
        query, passage = _mentions(tok, row)
        assert query in (["Denmark", "Japan"], ["Japan"], [])
        assert passage == ["Tokyo", "Denmark", "Copenhagen", "Japan"][: len(passage)]
        seen.add((len(query), len(passage)))
    assert len(seen) > 3  # some cuts fell inside mentions and kept none of them


def test_a_query_needs_a_language(bundle: Mluke, qa_db: Path) -> None:  # noqa: F811
    model = _model(bundle, qa_db)
    item = ClozeQuery(f"{PH} is in Japan.", (0, len(PH)), "Tokyo.", ((0, 5),))
    with pytest.raises(mluke.MlukeError, match="language"):
        _rows(model, bundle, [item])


def _scores(model: TransferModel, tokenizer, items=TOY, knowledge: bool = True) -> torch.Tensor:
    """The model's mention scores of ``items`` (without the kb spans when not ``knowledge``)."""
    model.eval()
    rows = attach_knowledge(model, tokenizer, record_rows(tokenizer, items).rows)
    for row in rows if not knowledge else []:
        row.knowledge = None
    with torch.no_grad():
        return model(collate(rows, pad_id=tokenizer.pad_id))


def _train(bundle: Mluke, db: Path, work: Path, epochs: int = 8, on_step=None) -> tuple[TransferModel, list]:  # noqa: F811
    model = _model(bundle, db)
    options = {"identity": {"t": "record-knowbert"}, "on_step": on_step}
    rows = _rows(model, bundle, TOY * 2)
    history = toy_fine_tune(
        model, rows, work, pad_id=bundle.tokenizer.pad_id, learning_rate=3e-3, epochs=epochs, save_every=1, **options
    )
    return model, history


def _answers(model: TransferModel, tokenizer) -> list[str]:
    chosen, _ = predict_record(model, tokenizer, TOY)
    return [q.passage[s[0] : s[1]] if s else "" for q, s in zip(TOY, chosen)]


def test_fine_tuning_trains_the_layer_and_a_saved_model_answers_the_same(
    demo_bundle: Mluke,  # noqa: F811
    qa_db: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    # (the tiny demo model's placeholder vector hardly sees the rest of its query, so the toy queries are not
    # learnt; what is checked is that the knowledge layer is in the path, trains, and survives save/load)
    table = demo_bundle.model.entities.vectors.clone()
    before = _scores(_model(demo_bundle, qa_db), demo_bundle.tokenizer)
    model, history = _train(demo_bundle, qa_db, tmp_path / "work")
    assert history[-1]["loss"] < history[0]["loss"]
    after = _scores(model, demo_bundle.tokenizer)
    assert not torch.allclose(before, after)
    assert not torch.allclose(after, _scores(model, demo_bundle.tokenizer, knowledge=False))  # the kb spans count
    assert torch.equal(model.luke.kar.entity_vectors, table)  # the entity table stays frozen
    assert not torch.equal(demo_bundle.model.kar_parameters()[0], model.luke.kar_parameters()[0])  # the layer trained
    out = save_transfer(model, demo_bundle.tokenizer, tmp_path / "record-kb")
    block = json.loads((out / "config.json").read_text(encoding="utf-8"))["mluke_transfer"]
    assert block["task"] == "record" and block["settings"]["knowbert"]["db"] == str(qa_db)
    loaded, tok = load_transfer(out)
    assert loaded.task == "record" and loaded.features == "knowbert"
    assert_same_weights(model, loaded)
    assert torch.equal(_scores(loaded, tok), after)
    assert _answers(loaded, tok) == _answers(model, demo_bundle.tokenizer)


def test_an_interrupted_record_run_resumes_to_the_same_weights(
    demo_bundle: Mluke,  # noqa: F811
    qa_db: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert_resumes(lambda work, **run: _train(demo_bundle, qa_db, work, **run), tmp_path)


def test_cli_record_with_knowbert_features(cli, knowbert_dir: Path, qa_db: Path, tmp_path: Path) -> None:  # noqa: F811
    examples = [
        RecordExample(
            f"q{i}",
            f"p{i}",
            q.passage,
            q.mentions,
            q.query,
            (q.passage[s:e],),
            ((s, e),),
        )
        for i, q in enumerate(TOY)
        for s, e in [q.mentions[q.labels.index(1)]]
    ]
    data = write_record(examples, tmp_path / "record.json")
    out = tmp_path / "record-kb"
    fast = {"epochs": "1", "batch_size": "2", "learning_rate": "1e-3", "no_progress": True}
    finetune = cli.bind("finetune", "record", features="knowbert", model=knowbert_dir, db=qa_db)
    res = finetune("-o", out, train=data, dev=data, **fast)
    refused = str(res.exception or res.output)  # no --lang and none in the file: refused before any work
    assert res.exit_code != 0 and str(data) in refused and "--lang" in refused and not out.exists()
    res = finetune("-o", out, "--lang", "en", train=data, dev=data, **fast)
    assert res.exit_code == 0, res.output
    assert "fine-tuned record (knowbert features)" in res.output
    assert (out / "knowbert" / "knowbert.json").is_file()
    res = cli("evaluate", "record", out, test=[f"en:{data}"], json=tmp_path / "r.json", no_progress=True)
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["features"] == "knowbert" and saved["languages"][0]["queries"] == len(examples)
    bad = ("finetune", "record", "-o", tmp_path / "bad", "--lang", "en")
    res = cli(*bad, train=data, dev=data, features="knowbert", **fast)
    assert res.exit_code != 0 and "KnowBert model folder" in str(res.exception or res.output)
