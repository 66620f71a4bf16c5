"""Contextual word retrieval: the parallel-spans and MLQA readers, exact reciprocal ranks, the evaluation on
the tiny demo, and the kb's parallel sentences."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kb.errors import InputFormatError, OptionError
from probes.cwr import (
    ParallelSpan,
    evaluate_cwr,
    read_mlqa_spans,
    read_parallel_jsonl,
    reciprocal_ranks,
    write_parallel_jsonl,
)
from probes.parallel import parallel_spans


def test_parallel_jsonl_round_trip_and_bad_lines(tmp_path):
    good = [
        ParallelSpan("1", "en", "Paris is in France.", (0, 5), ((0, 5, "Q90"), (12, 18, "Q142"))),
        ParallelSpan("1", "ja", "パリはフランスにある。", (0, 2), ((0, 2, "Q90"),)),
    ]
    path = tmp_path / "spans.jsonl"
    write_parallel_jsonl(good, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    bad = [
        '{"id": "2", "lang": "de", "text": "Kurz", "span": [2, 9]}',
        "not json",
        "[1, 2]",
        '{"id": "3", "lang": "de", "text": "Berlin", "span": [0, 6], "entities": [[0, 6]]}',
        '{"lang": "de", "text": "Berlin", "span": [0, 6]}',
    ]
    path.write_text("\n".join([lines[0], *bad, "", lines[1]]) + "\n", encoding="utf-8")
    data = read_parallel_jsonl(path)
    assert data.items == good and data.languages() == ["en", "ja"]
    assert data.skipped == {
        "span not [start, end] inside the text": 1,
        "not JSON": 1,
        "not a JSON object": 1,
        "entity not [start, end, key] inside the text": 1,
        "missing id, lang or text": 1,
    }
    assert data.examples[0].startswith(f"{path}:2: span not")
    assert data.items[1].surface == "パリ"


def test_duplicate_ids_and_empty_files_are_fatal(tmp_path):
    path = tmp_path / "dup.jsonl"
    record = {"id": "1", "lang": "en", "text": "Paris", "span": [0, 5]}
    path.write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(InputFormatError, match="id '1' occurs twice in language 'en'"):
        read_parallel_jsonl(path)
    path.write_text("not json\n")
    with pytest.raises(InputFormatError, match="no parallel span records found .*not JSON: 1"):
        read_parallel_jsonl(path)


def _squad(contexts: list[tuple[str, list[tuple[str, int, str]]]]) -> dict:
    return {
        "version": "1.0",
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": c,
                        "qas": [
                            {"id": i, "question": "?", "answers": [{"answer_start": s, "text": a}]} for i, s, a in qas
                        ],
                    }
                    for c, qas in contexts
                ],
            }
        ],
    }


def test_mlqa_layout(tmp_path):
    en = "The Eiffel Tower is in Paris."
    ar = "يقع برج إيفل في باريس"
    (tmp_path / "dev-context-en-question-en.json").write_text(
        json.dumps(_squad([(en, [("q1", en.index("Paris"), "Paris"), ("q2", 4, "Eiffel Tower"), ("bad", 0, "Nope")])]))
    )
    (tmp_path / "dev-context-ar-question-ar.json").write_text(
        json.dumps(_squad([(ar, [("q1", ar.index("باريس"), "باريس")])]), ensure_ascii=False), encoding="utf-8"
    )
    data = read_mlqa_spans(tmp_path, ["en", "ar"])
    assert [(i.id, i.lang, i.surface) for i in data.items] == [
        ("q1", "en", "Paris"),
        ("q2", "en", "Eiffel Tower"),
        ("q1", "ar", "باريس"),
    ]
    assert data.items[-1].span[1] == len(ar)  # an answer at the very end of the context
    assert data.skipped == {"answer text not at answer_start": 1}
    assert data.examples == [
        f"{tmp_path / 'dev-context-en-question-en.json'} [question bad]: answer text not at answer_start"
    ]
    with pytest.raises(InputFormatError, match="dev-context-de-question-de.json"):
        read_mlqa_spans(tmp_path, ["de"])


def test_reciprocal_ranks_are_exact_and_ties_count_against_the_gold():
    pool = np.eye(4, dtype=np.float32)
    queries = np.array([[1, 0, 0, 0], [0.6, 0.8, 0, 0], [0, 0, 1, 0], [0, 0, 0.5, 0.5]], dtype=np.float32)
    gold = np.array([0, 0, 2, 3])
    np.testing.assert_allclose(reciprocal_ranks(queries, pool, gold, chunk=3), [1, 0.5, 1, 0.5])


@pytest.fixture(scope="module")
def spans(embedded_db):
    return parallel_spans(embedded_db, ["en", "de", "ja"], size=24)


def test_parallel_sentences_from_the_kb(spans, embedded_db):
    assert len(spans) == 24 * 2 * 3
    by_id = {}
    for item in spans:
        by_id.setdefault(item.id, {})[item.lang] = item
        assert item.span in [(s, e) for s, e, _ in item.entities]
    assert all(set(v) == {"en", "de", "ja"} for v in by_id.values())
    first = by_id["0/subject"]
    assert len({{(s, e): k for s, e, k in i.entities}[i.span] for i in first.values()}) == 1  # the same entity
    assert spans == parallel_spans(embedded_db, ["en", "de", "ja"], size=24)  # seeded
    with pytest.raises(OptionError, match="no patterns for xx"):
        parallel_spans(embedded_db, ["en", "xx"])


def test_evaluate_cwr_on_the_tiny_demo(spans, tiny_demo):
    report = evaluate_cwr(str(tiny_demo), spans, langs=["de", "ja"])
    assert [r["lang"] for r in report.rows] == ["de", "ja"]
    for row in report.rows:
        assert row["queries"] == row["pool"] == 48
        assert 1 / 48 <= row["mrr_word"] <= 1 and 1 / 48 <= row["mrr_entity"] <= 1
    columns, rows = report.table()
    assert columns == ["lang", "queries", "pool", "MRR entity", "MRR word"] and rows[-1][0] == "average"
    assert report.to_dict()["average"]["word"] == pytest.approx(np.mean([r["mrr_word"] for r in report.rows]))
    with pytest.raises(OptionError, match="no spans in fr"):
        evaluate_cwr(str(tiny_demo), spans, langs=["fr"])


def test_entity_tokens_come_from_the_linker_by_default_and_gold_only_on_request(spans, tiny_demo):
    from dataclasses import replace

    from probes.cwr import item_vectors, linked_entities

    few = [i for i in spans if i.lang in ("en", "de")][:12]
    found = linked_entities(str(tiny_demo), few)
    assert len(found) == len(few) and any(found)
    gold_keys = {k for i in few for _, _, k in i.entities}
    for item, mentions in zip(few, found):
        for s, e, key in mentions:
            assert 0 <= s < e <= len(item.text) and isinstance(key, str) and key
    assert {k for m in found for _, _, k in m} & gold_keys  # it finds some of the names on its own
    # the default never reads the gold keys: wrong gold annotations change nothing ...
    wrong = [replace(i, entities=tuple((s, e, "Q1") for s, e, _ in i.entities)) for i in few]
    linked = item_vectors(str(tiny_demo), few, features="entity")
    np.testing.assert_array_equal(linked, item_vectors(str(tiny_demo), wrong, features="entity"))
    # ... while the gold oracle does
    gold = item_vectors(str(tiny_demo), few, features="entity", entities="gold")
    assert not np.allclose(gold, item_vectors(str(tiny_demo), wrong, features="entity", entities="gold"))
    assert not np.allclose(linked, item_vectors(str(tiny_demo), few, features="entity", entities="mask"))
    report = evaluate_cwr(str(tiny_demo), spans, langs=["de"], features=("entity",), entities="gold")
    assert report.entities == "gold" and report.to_dict()["entities"] == "gold"
    assert evaluate_cwr(str(tiny_demo), spans, langs=["de"], features=("entity",)).entities == "linked"
    with pytest.raises(OptionError, match="entities='oracle': expected one of linked, mask, gold"):
        evaluate_cwr(str(tiny_demo), spans, langs=["de"], entities="oracle")
