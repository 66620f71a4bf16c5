"""Errors that spoke Python now speak the command line's terms, and cases that were silent now say so."""

import json

import pytest
from typer.testing import CliRunner

import mluke
from kb.errors import OptionError
from mluke.cli import app

runner = CliRunner()


def test_a_subject_too_long_for_the_model_is_named(tiny_demo, embedded_db):
    long_subject = " ".join(["word"] * 1000)
    with pytest.raises(OptionError) as err:
        mluke.probe(
            "[X] is the capital of [Y]",
            "en",
            subjects=[long_subject],
            candidates=["Japan"],
            model=tiny_demo,
            db=embedded_db,
        )
    assert "1,000 words" in str(err.value) and "the model reads at most 512" in str(err.value)
    assert err.value.for_cli().startswith("--subject 'word word")
    with pytest.raises(OptionError, match="1,000 words"):  # open vocabulary too
        mluke.probe(
            "[X] is the capital of [Y]", "en", subjects=[long_subject], model=tiny_demo, db=embedded_db, relation="P740"
        )


def test_vocab_import_reads_the_layout_from_the_file(tmp_path):
    jsonl = tmp_path / "ev.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"id": 0, "entities": [["[PAD]", "en"]], "count": 0},
                {"id": 1, "entities": [["[UNK]", "en"]], "count": 0},
                {"id": 2, "entities": [["[MASK]", "en"]], "count": 0},
                {"id": 3, "entities": [["Tokyo", "en"], ["東京", "ja"]], "count": 7},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    res = runner.invoke(app, ["kb", "vocab-import", str(jsonl), "-o", str(tmp_path / "v.sqlite")])
    assert res.exit_code == 0, res.output
    assert "4 ids" in res.output
    plain = tmp_path / "entity_vocab.json"
    plain.write_text(json.dumps({"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "Tokyo": 3}), encoding="utf-8")
    res = runner.invoke(app, ["kb", "vocab-import", str(plain), "-o", str(tmp_path / "p.sqlite")])
    message = res.exception.for_cli()
    assert "no language prefix" in message and "pass --default-lang en" in message and "default_lang" not in message
    res = runner.invoke(
        app, ["kb", "vocab-import", str(plain), "-o", str(tmp_path / "p.sqlite"), "--default-lang", "en"]
    )
    assert res.exit_code == 0, res.output


def test_a_text_file_given_as_the_wikidata_dump_is_not_called_truncated(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\nmilk, eggs\n", encoding="utf-8")
    res = runner.invoke(
        app, ["kb", "build", "--wikidata", str(notes), "-o", str(tmp_path / "kb.sqlite"), "--workers", "1", "--quiet"]
    )
    message = res.exception.for_cli()
    assert "not a Wikidata JSON dump" in message and "line 1:" in message
    assert "truncated" not in message and not (tmp_path / "kb.sqlite").exists()


def test_link_says_why_its_table_is_empty(tmp_path, tiny_demo, embedded_db_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    japanese = tmp_path / "ja.txt"
    japanese.write_text("東京は日本の首都です。\n", encoding="utf-8")
    base = ["--model", str(tiny_demo), "--db", str(embedded_db_path), "--no-progress"]
    res = runner.invoke(app, ["link", str(empty), *base])
    assert res.exit_code == 0 and f"note: {empty} holds no text to link" in res.output, res.output
    res = runner.invoke(app, ["link", str(japanese), *base])
    assert res.exit_code == 0 and "no 'en' name of the kb occurs in the 1 text(s)" in res.output
    assert "--lang" in res.output
    res = runner.invoke(app, ["link", str(japanese), "--lang", "ja", *base])
    assert res.exit_code == 0 and "note:" not in res.output and "東京" in res.output
