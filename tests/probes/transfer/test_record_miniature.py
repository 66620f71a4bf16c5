"""The miniature ReCoRD sets from the embedded kb: every name marked, the query restating a passage fact with its
object at @placeholder, parallel test sets in every language, written in the ReCoRD layout."""

import json

import pytest

import mluke
from probes.transfer import read_record
from probes.transfer.miniature.qa import QaSettings
from probes.transfer.miniature.record import generate_record, write_record_miniature
from probes.transfer.readers.record import PLACEHOLDER

LANGS = ["en", "de", "ja", "ar"]


@pytest.fixture(scope="module")
def sets(embedded_db):
    return generate_record(embedded_db, LANGS, train_size=20, dev_size=5, test_size=8)


def test_queries_restate_a_passage_fact_with_the_answer_at_the_placeholder(sets):
    for by_lang in sets.values():
        for examples in by_lang.values():
            for e in examples:
                (answer,) = e.answers
                assert e.query.count(PLACEHOLDER) == 1
                assert e.answer_spans and all(e.text[s:t] == answer for s, t in e.answer_spans)
                assert set(e.answer_spans) <= set(e.entities) and len(e.entities) == 2 * 4  # two names per sentence
                assert all(e.text[s:t].strip() == e.text[s:t] != "" for s, t in e.entities)


def test_the_test_set_is_parallel_and_train_is_english_only(sets):
    assert list(sets["train"]) == ["en"] and list(sets["dev"]) == ["en"] and list(sets["test"]) == LANGS
    ids = {lang: [e.id for e in examples] for lang, examples in sets["test"].items()}
    assert all(v == ids["en"] for v in ids.values()) and len(ids["en"]) == 8
    assert sets["test"]["de"][0].text != sets["test"]["en"][0].text


def test_written_sets_read_back(embedded_db, tmp_path, sets):
    small = QaSettings(train_size=20, dev_size=5, test_size=8)
    folder = write_record_miniature(embedded_db, tmp_path / "mini", languages=LANGS, settings=small)
    assert read_record(folder / "train.en.json", lang="en").examples == sets["train"]["en"]
    assert read_record(folder / "test" / "test.ja.json", lang="ja").examples == sets["test"]["ja"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "mluke-miniature-record" and manifest["languages"] == LANGS
    with pytest.raises(mluke.MlukeError, match="must include 'en'"):
        generate_record(embedded_db, ["de"])
