"""Whole transfer runs: fine-tune on one language, evaluate on others (Python and CLI)."""

import json
from pathlib import Path

import pytest

import mluke
from mluke.finetuning import FineTuneConfig, load_transfer
from probes.transfer import evaluate, finetune

DATA = Path(__file__).parent / "data"
FAST = FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=2, max_entities=32)


@pytest.mark.parametrize("task, train", [("ner", "wikiann.tsv"), ("re", "kbp37.txt")])
def test_finetune_then_evaluate(tiny_demo, tmp_path, task, train):
    out = tmp_path / f"{task}-model"
    report = finetune(
        task, DATA / train, DATA / train, output=out, features="entity", model=tiny_demo, config=FAST, progress=False
    )
    assert [h["epoch"] for h in report.history] == [0, 1] and all(0 <= h["dev"] <= 1 for h in report.history)
    assert "kept epoch" in report.summary() and not (tmp_path / f"{task}-model.work").exists()
    model, _ = load_transfer(out)
    assert model.task == task and model.labels[0] == ("O" if task == "ner" else "no_relation")
    tests = [("en", DATA / train), ("de", DATA / ("wikiann.tsv" if task == "ner" else "relx_de.txt"))]
    result = evaluate(task, out, tests, progress=False)
    assert [r["lang"] for r in result.rows] == ["en", "de"] and result.rows[1]["examples"] > 0
    columns, rows = result.table()
    assert rows[-1][0] == "average" and len(columns) == 5
    assert json.loads(result.to_json())["average"]
    with pytest.raises(mluke.MlukeError, match="fine-tuned for"):
        evaluate("re" if task == "ner" else "ner", out, tests, progress=False)
    with pytest.raises(mluke.MlukeError, match="already exists"):
        finetune(task, DATA / train, DATA / train, output=out, model=tiny_demo, config=FAST, progress=False)


def test_cli_finetune_and_evaluate(finetune_cli, cli, tmp_path):
    out = tmp_path / "ner-w"
    res = finetune_cli("ner", "-o", out, train=DATA / "wikiann.tsv", dev=DATA / "wikiann.tsv", batch_size="4")
    assert res.exit_code == 0, res.output
    assert "kept epoch 1" in res.output
    res = cli(
        "evaluate",
        "ner",
        out,
        test=[f"en:{DATA / 'wikiann.tsv'}", f"de:{DATA / 'wikiann.tsv'}"],
        json=tmp_path / "r.json",
        no_progress=True,
    )
    assert res.exit_code == 0, res.output
    assert "average" in res.output and json.loads((tmp_path / "r.json").read_text())["features"] == "word"
    res = cli("evaluate", "ner", out, test="nolang")
    assert res.exit_code == 1 and "lang:path" in str(res.exception)
    res = cli("finetune", "xx", "-o", tmp_path / "x", train="a", dev="b")
    assert res.exit_code == 1 and "TASK xx: expected one of ner, re, qa" in res.exception.for_cli()  # before any work
