"""Several models side by side on mLAMA: an mLUKE checkpoint (entity mode) and a plain BERT masked LM (word
mode), as rows of one table with languages as columns."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mluke.cli import app
from probes import compare_mlama, eval_mlama
from tests.mluke.test_word_models import write_tiny_bert


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("word") / "bert")


def test_compare_an_mluke_checkpoint_with_a_word_model(mlama_dir, tiny_demo, bert_dir):
    comparison = compare_mlama(mlama_dir, [str(tiny_demo), str(bert_dir)], ["en", "ja"], mode="entity", progress=False)
    mluke_report, bert_report = comparison.reports
    assert (mluke_report.model, mluke_report.mode) == (str(tiny_demo), "entity")
    assert (bert_report.model, bert_report.mode) == (str(bert_dir), "word")
    assert any("no entity vocabulary: evaluated in word mode" in n for n in bert_report.notes)
    alone = eval_mlama(mlama_dir, str(bert_dir), ["en", "ja"], mode="word", progress=False)
    assert bert_report.p_at_1 == alone.p_at_1
    columns, rows = comparison.table()
    assert columns == ["model", "mode", "en", "ja", "avg"] and [r[:2] for r in rows] == [
        [str(tiny_demo), "entity"], [str(bert_dir), "word"]]
    assert rows[1][-1] == f"{100 * (alone.macro['en'] + alone.macro['ja']) / 2:.1f}"
    assert {r["model"] for r in comparison.rows()} == {str(tiny_demo), str(bert_dir)} and len(comparison.rows()) == 6


def test_eval_mlama_cli_with_two_models(mlama_dir, tiny_demo, bert_dir, tmp_path):
    res = CliRunner().invoke(app, ["eval-mlama", str(mlama_dir), "--model", str(tiny_demo), "--model", str(bert_dir),
                                   "--langs", "en,ja", "--json", str(tmp_path / "r.json"), "--csv",
                                   str(tmp_path / "r.csv"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "entity modes apply to mLUKE checkpoints only" in res.output and "avg" in res.output
    assert "no entity vocabulary" not in res.output  # by default each model is asked in its own mode
    data = json.loads((tmp_path / "r.json").read_text())
    assert [m["model"] for m in data["models"]] == [str(tiny_demo), str(bert_dir)]
    assert [m["mode"] for m in data["models"]] == ["entity", "word"]
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0] == "model,mode,lang,relation,subjects,P@1" and len(lines) == 7
