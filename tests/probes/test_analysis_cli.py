"""``mluke parallel-spans``, ``mluke index build|search``, ``mluke eval-cwr`` and ``mluke modularity``."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from mluke.cli import app


@pytest.fixture(scope="module")
def spans_file(tmp_path_factory, embedded_db_path):
    path = tmp_path_factory.mktemp("cli") / "spans.jsonl"
    res = CliRunner().invoke(
        app, ["parallel-spans", "-o", str(path), "--langs", "en,de,ja", "--size", "12", "--db", str(embedded_db_path)]
    )
    assert res.exit_code == 0, res.output
    assert "72 spans (12 sentences x 3 languages)" in res.output
    return path


def test_index_build_and_search(spans_file, tiny_demo, tmp_path):
    out = tmp_path / "idx"
    res = CliRunner().invoke(
        app,
        [
            "index",
            "build",
            str(spans_file),
            "-o",
            str(out),
            "--model",
            str(tiny_demo),
            "--features",
            "entity",
            "--kind",
            "hnsw",
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((out / "meta.json").read_text())
    assert (meta["count"], meta["features"], meta["kind"], meta["model"]) == (72, "entity", "hnsw", str(tiny_demo))
    first = json.loads((out / "items.jsonl").read_text(encoding="utf-8").splitlines()[0])
    text, (s, e) = first["text"], first["span"]
    res = CliRunner().invoke(
        app, ["index", "search", str(out), "--text", text, "--span", f"{s}:{e}", "-k", "3", "--json", "-"]
    )
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)
    assert len(hits) == 3 and hits[0]["text"] == text and hits[0]["span"] == [s, e]  # the span itself comes first
    assert hits[0]["score"] == pytest.approx(1.0, abs=1e-4)
    res = CliRunner().invoke(app, ["index", "build", str(spans_file), "-o", str(out), "--model", str(tiny_demo)])
    assert (
        res.exit_code == 1 and "already exists" in res.exception.for_cli() and "--overwrite" in res.exception.for_cli()
    )
    res = CliRunner().invoke(app, ["index", "search", str(out), "--text", text, "--span", "x"])
    assert res.exit_code == 1 and "expected start:end" in str(res.exception)


def test_eval_cwr_and_modularity(spans_file, tiny_demo):
    res = CliRunner().invoke(
        app, ["eval-cwr", str(spans_file), "--model", str(tiny_demo), "--langs", "de,ja", "--csv", "-", "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert [r["lang"] for r in rows] == ["de", "ja", "average"] and float(rows[0]["MRR entity"]) > 0
    res = CliRunner().invoke(app, ["modularity", str(spans_file), "--model", str(tiny_demo), "-k", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    table = json.loads(res.output)
    assert [r["lang"] for r in table] == ["de", "ja"] and {"entity-token", "word"} <= set(table[0])
    res = CliRunner().invoke(app, ["eval-cwr", str(spans_file), "--model", str(tiny_demo), "--query-lang", "fr"])
    assert res.exit_code == 1 and "no spans in the query language 'fr'" in str(res.exception)


@pytest.mark.parametrize(
    "command", [["index", "build"], ["index", "search"], ["eval-cwr"], ["modularity"], ["parallel-spans"]]
)
def test_help(command):
    res = CliRunner().invoke(app, [*command, "--help"])
    assert res.exit_code == 0 and "Usage" in res.output
