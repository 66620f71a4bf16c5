"""Relation classification in the TACRED layout: the reader and writer, TACRED's micro score (by hand), whole runs
and the CLI round trip (``mluke finetune re --format tacred``, ``mluke evaluate re``)."""

import json

import pytest

import mluke
from mluke.finetuning import FineTuneConfig, load_transfer
from probes.transfer import ReExample, evaluate, finetune, read_re, read_tacred, tacred_scores, write_tacred

RECORDS = [
    {
        "id": "r1",
        "token": ["Bill", "Gates", "founded", "Microsoft", "."],
        "subj_start": 0,
        "subj_end": 1,
        "obj_start": 3,
        "obj_end": 3,
        "subj_type": "PERSON",
        "obj_type": "ORGANIZATION",
        "relation": "per:employee_of",
    },
    {
        "id": "r2",
        "token": ["In", "Paris", ",", "Anna", "Weber", "smiled", "."],
        "subj_start": 3,
        "subj_end": 4,
        "obj_start": 1,
        "obj_end": 1,
        "subj_type": "PERSON",
        "obj_type": "CITY",
        "relation": "per:city_of_residence",
    },
    {
        "id": "r3",
        "token": ["Tom", "met", "Bob", "today", "."],
        "subj_start": 0,
        "subj_end": 0,
        "obj_start": 2,
        "obj_end": 2,
        "subj_type": "PERSON",
        "obj_type": "PERSON",
        "relation": "no_relation",
    },
]


def _file(path, records):
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def test_reads_words_joined_by_spaces_with_subject_head_and_object_tail(tmp_path):
    data = read_tacred(_file(tmp_path / "train.json", RECORDS), lang="en")
    assert len(data) == 3 and data.skipped == {} and data.layout == "tacred"
    first, second, third = data.examples
    assert first.text == "Bill Gates founded Microsoft ." and first.head == (0, 10) and first.tail == (19, 28)
    assert first.head_text == "Bill Gates" and first.tail_text == "Microsoft" and first.label == "per:employee_of"
    assert (first.id, first.lang, first.head_type, first.tail_type) == ("r1", "en", "PERSON", "ORGANIZATION")
    assert second.text == "In Paris , Anna Weber smiled ." and second.head_text == "Anna Weber"
    assert second.tail_text == "Paris" and second.head == (11, 21) and second.tail == (3, 8)
    assert third.label == "no_relation"
    assert data.labels == ("no_relation", "per:city_of_residence", "per:employee_of")
    assert data.relation_types == ("per:city_of_residence", "per:employee_of")
    with pytest.raises(mluke.MlukeError, match="no example found"):  # not the KBP37 layout
        read_re(tmp_path / "train.json")


def test_ids_default_to_positions_and_json_lines_are_read(tmp_path):
    bare = [{k: v for k, v in r.items() if k not in ("id", "subj_type", "obj_type")} for r in RECORDS]
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in bare), encoding="utf-8")
    data = read_tacred(path)
    assert [e.id for e in data] == ["0", "1", "2"] and data.examples[0].head_type is None


def test_bad_records_are_counted_and_named_with_their_line(tmp_path):
    good = RECORDS[0]
    bad = [
        [1, 2],  # not an object
        {k: v for k, v in good.items() if k != "relation"},  # missing field
        {**good, "token": ["a", 3]},  # tokens not strings
        {**good, "subj_end": "1"},  # index not an integer
        {**good, "obj_end": 9},  # outside the sentence
        {**good, "subj_start": 1, "subj_end": 0},  # end before start
        {**good, "obj_start": 1, "obj_end": 3},  # overlaps the subject
        {**good, "relation": "per title"},  # not one word
        {**good, "subj_type": 5},
        {**good, "token": ["Bill", " ", "x", "Microsoft", "."], "subj_start": 1, "subj_end": 1},  # blank entity
    ]
    path = tmp_path / "bad.json"
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in [good, *bad, good]) + "\n]", encoding="utf-8")
    data = read_tacred(path)
    assert len(data) == 2
    assert data.skipped == {
        "not a JSON object": 1,
        "missing field": 1,
        "token is not a list of strings": 1,
        "indices are not integers": 1,
        "bad entity indices": 2,
        "subject and object overlap": 1,
        "relation is not one word": 1,
        "subj_type/obj_type are not strings": 1,
        "blank entity": 1,
    }
    assert data.examples_skipped[0] == f"{path}:3: not a JSON object (list)"  # record 2 is on line 3
    assert any(s.startswith(f"{path}:7: bad entity indices (object [3, 9] in 5 tokens)") for s in data.examples_skipped)
    assert "skipped 10 records" in repr(data)


def test_a_broken_record_skips_that_record_only_and_empty_files_are_errors(tmp_path):
    path = tmp_path / "broken.json"
    text = json.dumps(RECORDS, indent=1)
    path.write_text(text.replace('"r2",', '"r2" oops', 1), encoding="utf-8")
    data = read_tacred(path)
    assert [e.id for e in data] == ["r1", "r3"] and data.skipped == {"not JSON": 1}
    with pytest.raises(mluke.errors.InputFormatError, match="no TACRED record found"):
        read_tacred(_file(tmp_path / "none.json", [{"token": []}]))
    with pytest.raises(mluke.errors.InputFormatError):
        read_tacred(tmp_path / "missing.json")


def test_write_tacred_round_trip(tmp_path):
    data = read_tacred(_file(tmp_path / "in.json", RECORDS))
    back = read_tacred(write_tacred(data.examples, tmp_path / "out.json"))
    assert back.examples == data.examples
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8")) == RECORDS
    inside = ReExample("x", "Bill Gates founded it", (0, 3), (11, 18), "per:founded")  # 'Bil' is not a word
    with pytest.raises(mluke.MlukeError, match="does not start and end at words"):
        write_tacred([inside], tmp_path / "bad.json")
    overlap = ReExample("y", "Bill Gates founded it", (0, 10), (5, 10), "per:founded")
    with pytest.raises(mluke.MlukeError, match="overlap"):
        write_tacred([overlap], tmp_path / "bad.json")


def test_tacred_micro_scores_by_hand():
    gold = ["per:title", "per:title", "org:founded", "no_relation", "no_relation", "per:age"]
    pred = ["per:title", "org:founded", "no_relation", "per:title", "no_relation", "per:age"]
    # positive predictions: rows 1, 2, 4, 6 -> 4 (row 4 is a no_relation gold predicted as a relation);
    # positive gold: rows 1, 2, 3, 6 -> 4; correct: rows 1 and 6 -> 2.
    scores = tacred_scores(gold, pred)
    assert (scores["correct"], scores["predicted"], scores["gold"]) == (2, 4, 4)
    assert scores["precision"] == 0.5 and scores["recall"] == 0.5 and scores["f1"] == 0.5
    assert scores["micro_f1"] == pytest.approx(0.5) and scores["accuracy"] == pytest.approx(3 / 6)
    # per type: per:title 1 correct of 2 predicted (rows 1, 4), 2 gold (rows 1, 2): F1 0.5; org:founded predicted
    # at row 2, gold at row 3: F1 0; per:age 1/1: F1 1
    assert scores["per_type"]["per:title"]["f1"] == pytest.approx(0.5)
    assert scores["per_type"]["org:founded"]["f1"] == 0.0 and scores["per_type"]["per:age"]["f1"] == 1.0
    assert scores["macro_f1"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    # a relation missed is recall only; a no_relation gold predicted as a relation is precision only
    assert tacred_scores(["per:age", "no_relation"], ["no_relation", "no_relation"])["precision"] == 1.0
    missed = tacred_scores(["per:age", "per:age"], ["per:age", "no_relation"])
    assert missed["precision"] == 1.0 and missed["recall"] == 0.5 and missed["f1"] == pytest.approx(2 / 3)
    spurious = tacred_scores(["per:age", "no_relation"], ["per:age", "per:age"])
    assert spurious["precision"] == 0.5 and spurious["recall"] == 1.0
    nothing = tacred_scores(["no_relation"], ["no_relation"])
    assert (nothing["precision"], nothing["recall"], nothing["f1"], nothing["accuracy"]) == (1.0, 0.0, 0.0, 1.0)
    with pytest.raises(mluke.MlukeError, match="pair up"):
        tacred_scores(["per:age"], [])
    with pytest.raises(mluke.MlukeError, match="not a relation label"):
        tacred_scores([""], ["per:age"])


FAST = FineTuneConfig(learning_rate=3e-3, batch_size=4, epochs=2, warmup=0.0)


def test_finetune_then_evaluate_tacred(tiny_demo, tmp_path):
    train = _file(tmp_path / "train.json", RECORDS * 3)
    out = tmp_path / "tacred-e"
    report = finetune("re", train, train, output=out, model=tiny_demo, config=FAST, progress=False, fmt="tacred")
    assert report.labels == ["no_relation", "per:city_of_residence", "per:employee_of"] and report.train_size == 9
    assert all(0 <= h["dev"] <= 1 for h in report.history)
    model, _ = load_transfer(out)
    assert model.task == "re" and model.settings["format"] == "tacred"
    result = evaluate("re", out, [("en", train)], progress=False)
    assert result.layout == "tacred" and result.rows[0]["examples"] == 9
    columns, rows = result.table()
    assert columns == ["lang", "examples", "precision", "recall", "f1", "macro_f1", "accuracy"]
    assert rows[0][:2] == ["en", 9] and rows[-1][0] == "average"
    with pytest.raises(mluke.MlukeError, match="expected one of kbp37, tacred"):
        evaluate("re", out, [("en", train)], progress=False, fmt="json")
    with pytest.raises(mluke.MlukeError, match="is for relation extraction"):
        finetune("ner", train, train, output=tmp_path / "x", model=tiny_demo, config=FAST, fmt="tacred")
    with pytest.raises(mluke.MlukeError, match="no example found"):  # a TACRED file read as KBP37
        evaluate("re", out, [("en", train)], progress=False, fmt="kbp37")


def test_cli_finetune_and_evaluate_re_in_the_tacred_layout(finetune_cli, cli, tmp_path):
    train = _file(tmp_path / "train.json", RECORDS * 2)
    out = tmp_path / "tacred-w"
    res = finetune_cli("re", "-o", out, train=train, dev=train, batch_size="4", format="tacred")
    assert res.exit_code == 0, res.output
    assert "fine-tuned re (word features) on 6 examples" in res.output
    res = cli("evaluate", "re", out, test=[f"en:{train}"], json=tmp_path / "r.json", no_progress=True)
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["task"] == "re" and saved["layout"] == "tacred" and saved["languages"][0]["examples"] == 6
    assert {"precision", "recall", "f1", "macro_f1", "accuracy"} <= set(saved["average"])
    model, tok = load_transfer(out)
    from probes.transfer.runs.ner_re import score

    data = read_tacred(train)
    direct = score("re", model, tok, data.examples, fmt="tacred")
    assert saved["languages"][0]["f1"] == pytest.approx(direct["f1"])
    res = cli("evaluate", "re", out, test=[f"en:{train}"], format="tacred", no_progress=True)
    assert res.exit_code == 0 and "precision" in res.output
    res = finetune_cli("typing", "-o", tmp_path / "x", train=train, dev=train, format="tacred")
    assert res.exit_code == 1 and "--format is for `finetune re`" in str(res.exception)
    res = finetune_cli("re", "-o", tmp_path / "x", train=train, dev=train, format="csv")
    assert res.exit_code == 1 and "--format csv: expected one of kbp37, tacred" in str(res.exception)
    res = cli("finetune", "--help")
    assert res.exit_code == 0 and "--format" in res.output
