"""Several models side by side on mLAMA: an mLUKE checkpoint (entity mode) and a plain BERT masked LM (word
mode), as rows of one table with languages as columns."""

from __future__ import annotations

import json

import pytest

from kb.errors import OptionError
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
        [str(tiny_demo), "entity"],
        [str(bert_dir), "word"],
    ]
    assert rows[1][-1] == f"{100 * (alone.macro['en'] + alone.macro['ja']) / 2:.1f}"
    assert {r["model"] for r in comparison.rows()} == {str(tiny_demo), str(bert_dir)} and len(comparison.rows()) == 6


def test_eval_mlama_cli_with_two_models(eval_mlama_cli, mlama_dir, tiny_demo, bert_dir, tmp_path):
    res = eval_mlama_cli(model=[tiny_demo, bert_dir], langs="en,ja", json=tmp_path / "r.json", csv=tmp_path / "r.csv")
    assert res.exit_code == 0, res.output
    assert "entity modes apply to mLUKE checkpoints only" in res.output and "avg" in res.output
    assert "no entity vocabulary" not in res.output  # by default each model is asked in its own mode
    data = json.loads((tmp_path / "r.json").read_text())
    assert [m["model"] for m in data["models"]] == [str(tiny_demo), str(bert_dir)]
    assert [m["mode"] for m in data["models"]] == ["entity", "word"]
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0] == "model,mode,lang,relation,subjects,P@1" and len(lines) == 7


def test_eval_mlama_answer_sets_scored_against_all_true_objects(mlama_dir, bert_dir):
    # a threshold below every probability answers each subject with all its candidates (less itself)
    report = eval_mlama(mlama_dir, str(bert_dir), ["en", "ja"], threshold=1e-9, progress=False)
    sets = report.sets
    assert sets["en"]["P36"] == pytest.approx({"precision": 0.25, "recall": 1.0, "F1": 0.4})  # 4 answers, 1 true
    # P47 is N-M: France borders {Germany, Spain} (answered both), Germany borders {France} (answered France, Spain)
    assert sets["en"]["P47"] == pytest.approx({"precision": 0.75, "recall": 1.0, "F1": (1 + 2 / 3) / 2})
    assert sets["ja"]["P36"] == pytest.approx({"precision": 1 / 3, "recall": 1.0, "F1": 0.5})
    assert report.macro_sets["en"] == pytest.approx({"precision": 0.5, "recall": 1.0, "F1": (0.4 + 5 / 6) / 2})
    assert {r["relation"]: r["F1"] for r in report.rows() if r["lang"] == "en"} == pytest.approx(
        {"P36": 0.4, "P47": 5 / 6}
    )
    assert report.to_dict()["threshold"] == 1e-9
    plain = eval_mlama(mlama_dir, str(bert_dir), ["en", "ja"], progress=False)
    assert report.p_at_1 == plain.p_at_1 and plain.sets == {} and "F1" not in plain.rows()[0]
    # a threshold of 1 answers nothing: every subject has true objects, so (LM-KBC) precision 1, recall and F1 0
    none = eval_mlama(mlama_dir, str(bert_dir), ["en"], threshold=1.0, progress=False)
    assert none.sets["en"] == {
        "P36": {"precision": 1.0, "recall": 0.0, "F1": 0.0},
        "P47": {"precision": 1.0, "recall": 0.0, "F1": 0.0},
    }


def test_eval_mlama_cli_threshold(eval_mlama_cli, mlama_dir, tiny_demo, bert_dir, tmp_path):
    res = eval_mlama_cli(model=bert_dir, threshold="1e-9", csv=tmp_path / "one.csv")
    assert res.exit_code == 0, res.output
    assert "answer sets p >= 1e-09" in res.output and "83.3" in res.output  # P47 F1 x 100
    lines = (tmp_path / "one.csv").read_text().splitlines()
    assert lines[0] == "lang,relation,subjects,P@1,precision,recall,F1" and lines[2].startswith("en,P47,2,")
    res = eval_mlama_cli(model=[tiny_demo, bert_dir], threshold="1e-9", csv=tmp_path / "two.csv")
    assert res.exit_code == 0, res.output
    assert "answer sets (p >= 1e-09): F1 x 100" in res.output
    assert (tmp_path / "two.csv").read_text().splitlines()[
        0
    ] == "model,mode,lang,relation,subjects,P@1,precision,recall,F1"
    for bad in ("1.5", "-0.1"):  # refused before any model is loaded
        res = eval_mlama_cli(model=tmp_path / "nowhere", threshold=bad)
        assert res.exit_code == 1 and isinstance(res.exception, OptionError)
        assert str(res.exception) == f"--threshold {float(bad)}: expected a number from 0 to 1"
    # 0 would answer with everything: refused by the library
    res = eval_mlama_cli(model=tmp_path / "nowhere", threshold="0")
    assert res.exit_code == 1 and "expected a probability in (0, 1]" in res.exception.for_cli()
