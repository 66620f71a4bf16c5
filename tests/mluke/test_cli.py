import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from mluke.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _commands(group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        path = (*prefix, name)
        yield path, cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, path)


ALL = list(_commands(typer.main.get_command(app)))


@pytest.mark.parametrize("path, cmd", ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_help_and_is_documented(path, cmd):
    assert cmd.help and len(cmd.help.strip()) > 20
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output
    for param in cmd.params:
        if param.param_type_name == "option" and param.name != "help":
            assert param.help, f"{' '.join(path)} {param.opts} has no help"
    assert f"mluke {' '.join(path)}" in (ROOT / "docs" / "command-line.md").read_text(encoding="utf-8")


def _mluke(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "mluke", *args], capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_build_info_lookup_vocab(tmp_path, embedded_db_path):
    out = tmp_path / "kb.sqlite"
    res = runner.invoke(app, ["kb", "build", "--embedded", "-o", str(out), "--languages", "en,ja"])
    assert res.exit_code == 0, res.output
    assert "entities" in res.output and out.exists()
    res = runner.invoke(
        app, ["kb", "info", str(out), "--json", str(tmp_path / "info.json"), "--csv", str(tmp_path / "info.csv")]
    )
    assert res.exit_code == 0 and "per language" in res.output
    info = json.loads((tmp_path / "info.json").read_text())
    assert set(info["languages"]) == {"en", "ja"} and info["entities"] > 6000
    assert (tmp_path / "info.csv").read_text().splitlines()[0].startswith("lang,entities,titles")
    res = runner.invoke(app, ["kb", "lookup", str(out), "東京", "--lang", "ja", "--json", "-"])
    assert json.loads(res.output)[0]["key"] == "geonames:1850147"
    res = runner.invoke(app, ["kb", "lookup", str(out), "--key", "geonames:1861060", "--lang", "ja"])
    assert res.exit_code == 0 and "東京" in res.output and "首都" in res.output
    vocab = tmp_path / "v.sqlite"
    res = runner.invoke(app, ["kb", "vocab", str(out), "-o", str(vocab), "--size", "100", "--min-languages", "2"])
    assert res.exit_code == 0 and "104 ids" in res.output
    hf = tmp_path / "entity_vocab.json"
    assert runner.invoke(app, ["kb", "vocab-export", str(vocab), "-o", str(hf)]).exit_code == 0
    res = runner.invoke(app, ["kb", "vocab-import", str(hf), "-o", str(tmp_path / "v2.sqlite"), "--db", str(out)])
    assert res.exit_code == 0 and "'[MASK]': 2" in res.output


def test_errors_are_one_line_without_traceback(tmp_path):
    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello")
    proc = _mluke("kb", "info", str(not_db), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {not_db}: not an SQLite file, so not an mluke entity database"
    proc = _mluke("kb", "lookup", str(not_db), check=False)
    assert proc.returncode == 1 and "either a QUERY" in proc.stderr and "Traceback" not in proc.stderr
    proc = _mluke("kb", "build", check=False)
    assert proc.returncode == 1 and "--embedded" in proc.stderr
    proc = _mluke("kb", "info", "--bogus", check=False)
    assert proc.returncode == 2 and "No such option" in proc.stderr


def test_lookup_miss_and_unknown_language(embedded_db_path):
    proc = _mluke("kb", "lookup", str(embedded_db_path), "Atlantis", check=False)
    assert proc.returncode == 1 and "no entity named 'Atlantis'" in proc.stdout
    proc = _mluke("kb", "lookup", str(embedded_db_path), "Paris", "--lang", "xx", check=False)
    assert proc.returncode == 1 and "unknown language 'xx'" in proc.stderr


def test_existing_output_is_kept(tmp_path, embedded_db_path):
    out = tmp_path / "kb.sqlite"
    out.write_bytes(b"precious")
    proc = _mluke("kb", "build", "--embedded", "-o", str(out), check=False)
    assert proc.returncode == 1 and "already exists" in proc.stderr
    assert out.read_bytes() == b"precious"
