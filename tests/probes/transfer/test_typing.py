"""Entity typing on the evaluation side: the Open Entity reader and writer, the loose micro metric, whole runs
and the CLI."""

import json

import pytest

import mluke
from mluke.finetuning import FineTuneConfig, load_transfer
from probes.transfer import (
    TypingExample,
    evaluate,
    finetune,
    read_typing,
    typing_scores,
    write_typing,
)
from probes.transfer.readers.typing import GENERAL_TYPES

RECORDS = [
    {"sent": "The city of Paris is big .", "start": 12, "end": 17, "labels": ["place", "location", "city"]},
    {"sent": "A man called Bob said hello .", "start": 13, "end": 16, "labels": ["person", "man"]},
    {"sent": "The city of Rome is old .", "start": 12, "end": 16, "labels": ["location", "place"]},
    {"sent": "A man called Tom said hello .", "start": 13, "end": 16, "labels": ["person"]},
]


def _list_file(path, records):
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def _lines_file(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("write", [_list_file, _lines_file])
def test_reads_json_lists_and_lines_keeping_the_general_types(tmp_path, write):
    data = read_typing(write(tmp_path / "train.json", RECORDS), lang="en")
    assert len(data) == 4 and not data.skipped
    first = data.examples[0]
    assert first == TypingExample("0", RECORDS[0]["sent"], (12, 17), ("location", "place"), "en")
    assert first.mention == "Paris" and data.examples[1].labels == ("person",)
    assert data.labels == ("location", "person", "place") and data.dropped_labels == {"city": 1, "man": 1}
    every = read_typing(tmp_path / "train.json", all_labels=True)
    assert every.examples[0].labels == ("city", "location", "place") and not every.dropped_labels
    assert "man" in every.labels and len(GENERAL_TYPES) == 9


def test_bad_records_are_counted_and_named_with_their_line(tmp_path):
    good = RECORDS[0]
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"sent": "x y", "start": 0, "labels": []}),
        json.dumps({**good, "start": "12"}),
        json.dumps({**good, "end": 99}),
        json.dumps({**good, "start": 3, "end": 4}),  # a space
        json.dumps({**good, "labels": "person"}),
        json.dumps({**good, "sent": 5}),
        json.dumps({**good, "id": "kept"}),
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = read_typing(path)
    assert [e.id for e in data.examples] == ["0", "kept"]
    assert data.skipped == {
        "not JSON": 1,
        "not a JSON object": 1,
        "missing field": 1,
        "start/end are not integers": 1,
        "bad mention span": 2,
        "labels are not a list of strings": 1,
        "sent is not a string": 1,
    }
    assert f"{path}:2: not JSON" in data.examples_skipped[0]
    assert any(e.startswith(f"{path}:4: missing field (end)") for e in data.examples_skipped)
    assert "skipped 8 records" in repr(data)


def test_a_broken_record_in_a_json_list_skips_that_record_only(tmp_path):
    text = json.dumps(RECORDS[:2], indent=1)
    broken = text.replace('"start": 13', '"start": 13 13', 1)  # the second record is not JSON
    path = tmp_path / "list.json"
    path.write_text(broken + "\n" + "", encoding="utf-8")
    data = read_typing(path)
    assert [e.mention for e in data.examples] == ["Paris"] and data.skipped == {"not JSON": 1}
    line = broken[: broken.index("{", 5)].count("\n") + 1
    assert data.examples_skipped[0].startswith(f"{path}:{line}: not JSON")
    path.write_text(text.rstrip().removesuffix("]") + ",\n" + json.dumps(RECORDS[2]) + "\n", encoding="utf-8")
    assert len(read_typing(path)) == 3  # a list without its closing bracket


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(mluke.errors.InputFormatError, match="nope.json"):
        read_typing(tmp_path / "nope.json")
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    with pytest.raises(mluke.errors.InputFormatError, match="no Open Entity record found"):
        read_typing(tmp_path / "empty.json")
    _lines_file(tmp_path / "bad.jsonl", [{"sent": "x"}])
    with pytest.raises(mluke.errors.InputFormatError, match="missing field"):
        read_typing(tmp_path / "bad.jsonl")


def test_write_typing_round_trip(tmp_path):
    data = read_typing(_list_file(tmp_path / "a.json", RECORDS), all_labels=True)
    again = read_typing(write_typing(data.examples, tmp_path / "b.jsonl"), all_labels=True)
    assert again.examples == data.examples
    with pytest.raises(mluke.MlukeError, match="span"):
        write_typing([TypingExample("x", "abc", (2, 9), ())], tmp_path / "c.jsonl")


def test_loose_micro_scores_by_hand():
    gold = [{"person"}, {"location", "place"}, {"organization", "group"}, set()]
    predicted = [{"person", "group"}, {"location"}, set(), {"event"}]
    scores = typing_scores(gold, predicted)
    # correct: 1 + 1 + 0 + 0 = 2; predicted: 2 + 1 + 0 + 1 = 4; gold: 1 + 2 + 2 + 0 = 5
    assert (scores["correct"], scores["predicted"], scores["gold"]) == (2, 4, 5)
    assert scores["precision"] == pytest.approx(2 / 4) and scores["recall"] == pytest.approx(2 / 5)
    assert scores["f1"] == pytest.approx(2 * 0.5 * 0.4 / 0.9)
    assert scores["accuracy"] == 0.0
    assert scores["per_type"]["person"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert scores["per_type"]["group"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    # not a mean of per-example scores: example 1 alone would have precision 1/2, example 2 precision 1/1
    perfect = typing_scores([["a", "b"], ["c"]], [["b", "a"], ["c"]])
    assert perfect["f1"] == perfect["accuracy"] == 1.0
    assert typing_scores([[]], [[]])["f1"] == 0.0  # nothing gold or predicted: 0, not an error
    with pytest.raises(mluke.MlukeError, match="pair up"):
        typing_scores([["a"]], [])


def test_loose_macro_scores_by_hand_as_open_entity_scorer_prints_them():
    gold = [{"person"}, {"location", "place"}, {"organization", "group"}, set()]
    predicted = [{"person", "group"}, {"location"}, set(), {"event"}]
    scores = typing_scores(gold, predicted)
    # precision over the 3 examples with a prediction: (1/2 + 1/1 + 0/1) / 3; recall over the 3 with gold types:
    # (1/1 + 1/2 + 0/2) / 3
    assert scores["macro_precision"] == pytest.approx(0.5) and scores["macro_recall"] == pytest.approx(0.5)
    assert scores["macro_f1"] == pytest.approx(0.5) and scores["f1"] != scores["macro_f1"]
    assert typing_scores([[]], [[]])["macro_f1"] == 0.0


# Two lines of Open Entity's original release (uwnlp/open_type crowd data), in its field layout
RELEASE = [
    {
        "annot_id": "NYT_ENG_19950101.0001_1",
        "mention_span": "the city of Paris",
        "left_context_token": ["He", "moved", "to"],
        "right_context_token": ["in", "1990", "."],
        "y_str": ["location", "city", "place"],
    },
    {
        "annot_id": "WKP_2",
        "mention_span": "Bob",
        "left_context_token": [],
        "right_context_token": ["said", "hello", "."],
        "y_str": ["person", "man"],
    },
]


def test_reads_the_original_release_layout(tmp_path):
    data = read_typing(_lines_file(tmp_path / "test.json", RELEASE))
    assert not data.skipped and len(data) == 2
    first, second = data.examples
    assert first.text == "He moved to the city of Paris in 1990 ." and first.mention == "the city of Paris"
    assert first.id == "NYT_ENG_19950101.0001_1" and first.labels == ("location", "place")
    assert second.text == "Bob said hello ." and second.span == (0, 3) and second.labels == ("person",)
    broken = read_typing(
        _lines_file(tmp_path / "broken.json", [{**RELEASE[0], "left_context_token": "He"}, RELEASE[1]])
    )
    assert len(broken) == 1 and broken.skipped == {"left/right_context_token are not lists of strings": 1}


FAST = FineTuneConfig(learning_rate=3e-3, batch_size=4, epochs=2, warmup=0.0)


def test_finetune_then_evaluate_typing(tiny_demo, tmp_path):
    train = _list_file(tmp_path / "train.json", RECORDS * 3)
    out = tmp_path / "typing-e"
    report = finetune("typing", train, train, output=out, model=tiny_demo, config=FAST, progress=False)
    assert report.labels == ["location", "person", "place"] and report.train_size == 12
    assert all(0 <= h["dev"] <= 1 for h in report.history) and not (tmp_path / "typing-e.work").exists()
    model, _ = load_transfer(out)
    assert model.task == "typing" and model.settings["all_labels"] is False
    result = evaluate("typing", out, [("en", train), ("de", train)], progress=False)
    row = result.rows[0]
    assert row["examples"] == 12 and set(row) >= {"precision", "recall", "f1", "accuracy", "per_type"}
    columns, rows = result.table()
    assert columns == ["lang", "examples", "precision", "recall", "f1", "macro_f1", "accuracy"]
    assert rows[-1][0] == "average"
    every = finetune(
        "typing", train, train, output=tmp_path / "all", model=tiny_demo, config=FAST, progress=False, all_labels=True
    )
    assert every.labels == ["city", "location", "man", "person", "place"]
    with pytest.raises(mluke.MlukeError, match="fine-tuned for"):
        evaluate("ner", out, [("en", train)], progress=False)


def test_cli_finetune_and_evaluate_typing(finetune_cli, cli, tmp_path):
    train = _lines_file(tmp_path / "train.jsonl", RECORDS * 2)
    out = tmp_path / "typing-w"
    res = finetune_cli("typing", "-o", out, train=train, dev=train, batch_size="4")
    assert res.exit_code == 0, res.output
    assert "kept epoch 1" in res.output and "fine-tuned typing (word features)" in res.output
    res = cli("evaluate", "typing", out, test=[f"en:{train}"], json=tmp_path / "r.json", no_progress=True)
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["task"] == "typing" and saved["languages"][0]["examples"] == 8 and "f1" in saved["average"]
    res = finetune_cli("ner", "-o", tmp_path / "x", "--all-labels", train=train, dev=train)
    assert res.exit_code == 1 and "--all-labels is for `finetune typing`" in str(res.exception)
    res = cli("finetune", "--help")
    assert res.exit_code == 0 and "typing" in res.output and "--all-labels" in res.output


def test_bytes_that_are_not_utf8(tmp_path):
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in RECORDS[:2]]
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b"\n".join([lines[0], b'{"sent": "caf\xe9", "start": 0, "end": 3, "labels": []}', lines[1]]))
    data = read_typing(path)
    assert len(data) == 2 and data.skipped == {"not UTF-8": 1} and data.examples_skipped[0].startswith(f"{path}:2:")
    path = tmp_path / "latin.json"
    path.write_bytes(b"[\n" + lines[0] + b',\n{"sent": "caf\xe9"}\n]')
    with pytest.raises(mluke.errors.InputFormatError, match=r"latin\.json:3: bytes that are not UTF-8"):
        read_typing(path)
