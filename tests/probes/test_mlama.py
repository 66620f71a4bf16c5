import json

import pytest

import kb
import mluke
from mluke.results import Prediction, ProbeResult, SubjectResult
from probes import eval_mlama, language_bias, read_mlama
from tests.probes.conftest import BERLIN, FRANCE, GERMANY, JAPAN, PARIS, SPAIN, TOKYO


def test_reader_maps_by_uri_keeps_n_to_m_and_skips_dates(mlama_dir):
    rels = {r.relation: r for r in read_mlama(mlama_dir, "en")}
    assert set(rels) == {"P36", "P47"}  # P569 and date_of_birth are dates
    assert rels["P47"].gold[FRANCE] == {GERMANY, SPAIN}
    assert rels["P36"].subjects == {JAPAN: "Japan", FRANCE: "France", GERMANY: "Germany"}
    assert rels["P36"].candidates == [(TOKYO, "Tokyo"), (PARIS, "Paris"), (BERLIN, "Berlin"), (None, "Atlantis")]
    ja = read_mlama(mlama_dir / "mlama1.1", "ja")[0]  # the data folder itself works too
    assert not ja.template.x_first and ja.gold[JAPAN] == {TOKYO} and (None, "ベルリン") in ja.candidates


def test_reader_errors(mlama_dir, tmp_path):
    with pytest.raises(kb.KbFormatError, match="languages here: en, ja"):
        read_mlama(mlama_dir, "de")
    with pytest.raises(kb.KbFormatError, match="expected the mLAMA 1.1 layout"):
        read_mlama(tmp_path, "en")
    bad = mlama_dir / "mlama1.1" / "en" / "P36.jsonl"
    bad.write_text(bad.read_text() + "{oops\n")
    with pytest.raises(kb.KbFormatError, match="P36.jsonl, line 4: not valid JSON"):
        read_mlama(mlama_dir, "en")
    (mlama_dir / "mlama1.1" / "en" / "templates.jsonl").write_text('{"relation": "P36", "template": "[X] is [Z]"}\n')
    with pytest.raises(kb.TemplateError, match="templates.jsonl .P36.*unknown placeholder"):
        read_mlama(mlama_dir, "en")


def test_evaluate_mlama_on_the_tiny_demo(mlama_dir, tiny_demo):
    bundle = mluke.load(tiny_demo)
    report = eval_mlama(mlama_dir, bundle, ["en", "ja"], progress=False)
    assert set(report.p_at_1) == {"en", "ja"} and set(report.p_at_1["en"]) == {"P36", "P47"}
    assert report.counts["en"] == {"P36": 3, "P47": 2}
    assert report.macro["en"] == pytest.approx((report.p_at_1["en"]["P36"] + report.p_at_1["en"]["P47"]) / 2)
    assert len(report.bias) == 3 and {b["relation"] for b in report.bias} == {"P36", "P47"}
    word = eval_mlama(mlama_dir, bundle, ["en"], mode="word", relations=["P36"], progress=False)
    assert word.mode == "word" and list(word.p_at_1["en"]) == ["P36"]


def test_eval_mlama_cli(eval_mlama_cli, mlama_dir, tiny_demo, tmp_path):
    res = eval_mlama_cli(model=tiny_demo, langs="en,ja", json=tmp_path / "r.json", csv=tmp_path / "r.csv")
    assert res.exit_code == 0, res.output
    assert "macro average" in res.output and "language bias" in res.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert set(data["macro_p_at_1"]) == {"en", "ja"} and len(data["relations"]) == 3
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == "lang,relation,subjects,P@1"


def test_eval_mlama_leaves_out_an_empty_relation_file_and_says_so(eval_mlama_cli, mlama_dir, tiny_demo):
    (mlama_dir / "mlama1.1" / "en" / "P36.jsonl").write_text("")
    res = eval_mlama_cli(model=tiny_demo, langs="en")
    assert res.exit_code == 0, res.output
    assert "note: left out (their facts files hold no facts): en/P36.jsonl" in res.output
    assert "│ P47 " in res.output and "│ P36 " not in res.output
    res = eval_mlama_cli(model=tiny_demo, langs="en", relations="P36")
    assert isinstance(res.exception, kb.InputFormatError)
    assert str(res.exception) == f"{mlama_dir}: nothing to evaluate in en: the facts files of en/P36 hold no facts"


def test_eval_mlama_takes_one_language_and_relation_as_strings(mlama_dir, tiny_demo):
    report = eval_mlama(mlama_dir, tiny_demo, "en", relations="P36", progress=False)
    assert list(report.p_at_1) == ["en"] and list(report.p_at_1["en"]) == ["P36"]


def _row(subject, gold, top):
    return SubjectResult(
        subject,
        subject,
        [gold],
        [gold],
        [Prediction(top, top.upper(), -1.0, "entity", top == gold)],
        1 if top == gold else 2,
    )


def test_language_bias_counts_the_top_false_positive():
    rows = [_row("a", "x", "paris"), _row("b", "y", "paris"), _row("c", "z", "rome"), _row("d", "w", "w")]
    result = ProbeResult("[X] is in [Y].", "fr", "P17", "entity", False, 1, rows)
    bias = language_bias(result)
    assert (
        bias["false_predictions"] == 3
        and bias["top_false_positive"] == "PARIS"
        and bias["share"] == pytest.approx(2 / 3)
    )
    assert language_bias(ProbeResult("t", "fr", None, "word", False, 1, [_row("d", "w", "w")]))["share"] == 0.0


def _google_re(mlama_dir):
    """Add mLAMA's Google-RE layout to the fixture: place_of_birth.jsonl with labels only, its candidates in
    GoogleRE_objects/en.json, and a T-REx relation in which "Springfield" has two QIDs."""
    en = mlama_dir / "mlama1.1" / "en"
    with (en / "templates.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"relation": "place_of_birth", "template": "[X] was born in [Y] ."}) + "\n")
        f.write(json.dumps({"relation": "P131", "template": "[X] is located in [Y] ."}) + "\n")
    rows = [
        {"sub_label": "France", "obj_label": "Paris", "lineid": 1, "uuid": "a"},
        {"sub_label": "Alice Example", "obj_label": "Tokyo", "lineid": 2, "uuid": "b"},
        {"sub_label": "Bob", "obj_label": "Springfield", "lineid": 3, "uuid": "c"},
    ]
    (en / "place_of_birth.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    trex = [
        {"sub_uri": "Q900", "sub_label": "Springfield", "obj_uri": "Q1", "obj_label": "Illinois"},
        {"sub_uri": "Q901", "sub_label": "Springfield", "obj_uri": "Q2", "obj_label": "Massachusetts"},
    ]
    (en / "P131.jsonl").write_text("".join(json.dumps(r) + "\n" for r in trex), encoding="utf-8")
    (mlama_dir / "GoogleRE_objects").mkdir()
    (mlama_dir / "GoogleRE_objects" / "en.json").write_text(
        json.dumps({"place_of_birth": {"objects": ["Paris", "Tokyo", "Springfield", "Berlin"]}})
    )
    return en


def test_google_re_relations_are_matched_by_label_and_keep_the_language(mlama_dir):
    _google_re(mlama_dir)
    rels = {r.relation: r for r in read_mlama(mlama_dir, "en")}
    assert set(rels) == {"P36", "P47", "P131", "place_of_birth"}  # the other relations are all still there
    pob = rels["place_of_birth"]
    # France, Paris, Tokyo have one QID in P36/P47; Alice and Bob none; Springfield two (P131): kept as labels
    assert pob.subjects == {FRANCE: "France", "label:Alice Example": "Alice Example", "label:Bob": "Bob"}
    assert pob.gold == {FRANCE: {PARIS}, "label:Alice Example": {TOKYO}, "label:Bob": {"Springfield"}}
    assert pob.candidates == [(PARIS, "Paris"), (TOKYO, "Tokyo"), (None, "Springfield"), (BERLIN, "Berlin")]
    assert pob.note == (
        "en/place_of_birth: no sub_uri/obj_uri (Google-RE layout); matched by label to the QIDs of "
        "the language's other relations: 1 of 3 subjects, 2 of 3 objects (the rest kept as labels, "
        "scored with word masks)"
    )
    assert rels["P36"].note == ""


def test_google_re_file_errors_name_the_file_and_line(mlama_dir):
    en = _google_re(mlama_dir)
    with (en / "place_of_birth.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"sub_label": "Carol"}) + "\n")
    with pytest.raises(kb.KbFormatError, match=r"place_of_birth.jsonl, line 4: missing 'obj_label'; .*Google-RE"):
        read_mlama(mlama_dir, "en")
    # in a file with QIDs, a fact without one is still an error
    (en / "place_of_birth.jsonl").unlink()
    with (en / "P36.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"sub_label": "Spain", "obj_label": "Madrid", "obj_uri": "Q2807"}) + "\n")
    with pytest.raises(kb.KbFormatError, match=r"P36.jsonl, line 4: missing 'sub_uri'"):
        read_mlama(mlama_dir, "en")


def test_evaluate_mlama_with_a_google_re_relation(eval_mlama_cli, mlama_dir, tiny_demo, tmp_path):
    _google_re(mlama_dir)
    res = eval_mlama_cli(model=tiny_demo, langs="en", relations="P36,place_of_birth", json=tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert {r["relation"]: r["subjects"] for r in data["relations"]} == {"P36": 3, "place_of_birth": 3}
    assert len(data["notes"]) == 1 and "note: en/place_of_birth: no sub_uri/obj_uri" in res.output
