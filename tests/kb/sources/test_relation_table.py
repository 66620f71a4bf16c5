"""The relation table: templates for every mLAMA relation in the 24 languages, and importing others."""

import json
import shutil
import unicodedata

import pytest

import kb
from kb.db.templates import read_templates
from kb.sources.relation_table import load_relations

SCRIPTS = {
    "ar": "ARABIC",
    "bn": "BENGALI",
    "el": "GREEK",
    "hi": "DEVANAGARI",
    "ko": "HANGUL",
    "ru": "CYRILLIC",
    "te": "TELUGU",
    "th": "THAI",
}


def _script_ok(lang: str, text: str) -> bool:
    names = [unicodedata.name(c, "") for c in text.replace("[X]", "").replace("[Y]", "") if c.isalpha()]
    if lang == "ja":
        return any("HIRAGANA" in n or "KATAKANA" in n for n in names) and all(
            n.startswith(("CJK", "HIRAGANA", "KATAKANA")) for n in names
        )
    if lang == "zh":
        return bool(names) and all(n.startswith("CJK") for n in names)
    expect = SCRIPTS.get(lang, "LATIN")
    return bool(names) and all(expect in n for n in names)


def test_every_mlama_relation_has_a_template_in_every_language_in_its_script():
    table = load_relations()
    assert set(kb.MLAMA_PROPERTIES) | {"P569", "P38"} <= set(table)  # T-REx, Google-RE (date included), currency
    for pid, rel in table.items():
        assert rel["label_en"] and rel["description"], pid
        assert set(rel["templates"]) == set(rel["labels"]) == set(kb.MLUKE_LANGUAGES), pid
        for lang, text in rel["templates"].items():
            kb.parse_template(text, where=f"{pid}/{lang}")  # exactly one [X] and one [Y]
            assert _script_ok(lang, text), (pid, lang, text)
            assert rel["labels"][lang].strip(), (pid, lang)
            if lang in ("ja", "zh", "th"):
                assert " [X]" not in text and " [Y]" not in text, (pid, lang, text)  # no spaces between words there


def test_no_template_repeats_within_a_language():
    table = load_relations()
    for lang in kb.MLUKE_LANGUAGES:
        texts = [rel["templates"][lang] for rel in table.values()]
        assert len(texts) == len(set(texts)), lang


def test_the_demo_relations_keep_their_templates():
    """The demo model was trained on these sentences: they must not drift."""
    table = load_relations()
    assert table["P36"]["templates"]["ja"] == "[X]の首都は[Y]です。"
    assert table["P1376"]["templates"]["en"] == "[X] is the capital of [Y]."
    assert table["P30"]["templates"]["de"] == "[X] ist ein Land in [Y]."
    assert table["P740"]["templates"]["en"] == "[X] was founded in [Y]."


def test_every_kb_gets_the_whole_table(embedded_db):
    table = load_relations()
    assert {(p, l) for p, l in embedded_db.templates()} == {(p, l) for p in table for l in kb.MLUKE_LANGUAGES}
    assert embedded_db.property_label("P740", "en") == "location of formation"


def _mlama_folder(root):
    data = root / "mlama1.1"
    (data / "en").mkdir(parents=True)
    (data / "ja").mkdir()
    (data / "xx").mkdir()
    (data / "en" / "templates.jsonl").write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"relation": "P36", "template": "The capital of [X] is [Y] ."},
                {"relation": "place_of_birth", "template": "[X] was born in [Y] ."},
                {"relation": "P740", "template": "[X] was founded in [Y]."},  # the same as ours
                {"relation": "not_a_property", "template": "[X] and [Y]"},
            ]
        )
    )
    (data / "ja" / "templates.jsonl").write_text(
        json.dumps({"relation": "P36", "template": "[Y]は[X]の首都です。"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (data / "xx" / "templates.jsonl").write_text(json.dumps({"relation": "P36", "template": "[X] xx [Y]"}) + "\n")
    return root


def test_mlama_templates_go_into_a_kb(tmp_path, embedded_db_path):
    db_path = shutil.copy(embedded_db_path, tmp_path / "kb.sqlite")
    folder = _mlama_folder(tmp_path / "mlama")
    read = read_templates(folder)
    assert read[("P19", "en")] == "[X] was born in [Y] ." and ("P36", "ja") in read
    report = kb.add_templates(db_path, folder)
    assert report == {"added": 0, "replaced": 3, "unchanged": 1, "other_languages": 1, "relations_without_pid": 1}
    with kb.EntityDB(db_path) as db:
        assert db.template("P36", "ja").text == "[Y]は[X]の首都です。"
        assert db.template("P19", "en").text == "[X] was born in [Y] ."
        assert db.template("P30", "en").text == load_relations()["P30"]["templates"]["en"]  # the others stay
        assert any(s["kind"] == "templates" for s in db.sources())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"relation": "P36", "template": "[X] only"}\n', encoding="utf-8")
    with pytest.raises(kb.errors.TemplateError, match=r"bad\.jsonl, line 1: \[Y\] missing"):
        kb.add_templates(db_path, bad, lang="en")
    bad.write_text("not json\n", encoding="utf-8")
    with pytest.raises(kb.errors.InputFormatError, match=r"bad\.jsonl, line 1: expected"):
        kb.add_templates(db_path, bad, lang="en")
    with kb.EntityDB(db_path) as db:
        assert db.template("P36", "ja").text == "[Y]は[X]の首都です。"  # a failed import changed nothing


def test_add_templates_cli(tmp_path, embedded_db_path):
    from typer.testing import CliRunner

    from mluke.cli import app

    db_path = shutil.copy(embedded_db_path, tmp_path / "kb.sqlite")
    res = CliRunner().invoke(app, ["kb", "add-templates", str(db_path), str(_mlama_folder(tmp_path / "m"))])
    assert res.exit_code == 0, res.output
    assert "replaced" in res.output and f"updated {db_path}" in res.output
