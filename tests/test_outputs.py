"""Outputs that cannot be written: every command refuses them before any work, with one line naming the path.

The tests run as root, where a folder's mode bits (chmod 0o555) do not stop writes; a path under a regular
file (``file/out.json``) cannot be written by anyone, root included, and a patched ``os.open``/``os.replace``
stands for a read-only or full disk where the refusal comes from the system call itself.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

import kb
from kb import files
from kb.errors import OutputError
from mluke.cli import app, main

#: Every option that names an output, as (command, flag): a new one must be added to CASES below.
OUTPUT_FLAGS = ("--json", "--csv", "--jsonl", "--output", "--gxlt-csv", "--corpus")


def _commands() -> list[tuple[str, click.Command]]:
    group = typer.main.get_command(app)
    found = []

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group) or hasattr(command, "list_commands"):
            for name in command.list_commands(click.Context(command)):
                walk(command.get_command(click.Context(command), name), [*path, name])  # type: ignore[arg-type]
        else:
            found.append((" ".join(path), command))

    walk(group, [])
    return found


def _cases(tmp: Path) -> dict[tuple[str, str], list[str]]:
    """A command line per (command, output flag); the output is ``tmp/blocked/out`` (``blocked`` is a file)
    and the model a folder that does not exist, so a command that got past its output would fail otherwise."""
    text, folder = tmp / "in.txt", tmp / "folder"
    nomodel = str(tmp / "no-model")
    probe = ["probe", "[X] is the capital of [Y]", "--model", nomodel]
    return {
        ("pretrain", "--output"): ["pretrain", "--preset", "tiny"],
        ("probe", "--json"): probe,
        ("probe", "--csv"): probe,
        ("eval-mlama", "--json"): ["eval-mlama", str(folder), "--model", nomodel],
        ("eval-mlama", "--csv"): ["eval-mlama", str(folder), "--model", nomodel],
        ("eval-demo", "--json"): ["eval-demo", "--model", nomodel],
        ("eval-aida", "--json"): ["eval-aida", str(text), "--model", nomodel],
        ("eval-nif", "--json"): ["eval-nif", str(text), "--model", nomodel],
        ("eval-bear", "--json"): ["eval-bear", str(folder), "--model", nomodel],
        ("eval-bear", "--csv"): ["eval-bear", str(folder), "--model", nomodel],
        ("eval-xfactr", "--json"): ["eval-xfactr", str(folder), "--model", nomodel],
        ("eval-xfactr", "--csv"): ["eval-xfactr", str(folder), "--model", nomodel],
        ("eval-lmkbc", "--json"): ["eval-lmkbc", str(text), str(text)],
        ("eval-lmkbc", "--csv"): ["eval-lmkbc", str(text), str(text)],
        ("link", "--jsonl"): ["link", str(text), "--model", nomodel],
        ("eval-link", "--json"): ["eval-link", str(folder), "--model", nomodel],
        ("eval-link", "--csv"): ["eval-link", str(folder), "--model", nomodel],
        ("corpus", "--output"): ["corpus", str(folder), "--tokenizer", str(folder), "--vocab", str(text)],
        ("finetune", "--output"): ["finetune", "typing", "--train", str(text), "--dev", str(text)],
        ("evaluate", "--json"): ["evaluate", "ner", str(folder), "--test", f"en:{text}"],
        ("evaluate", "--csv"): ["evaluate", "ner", str(folder), "--test", f"en:{text}"],
        ("evaluate", "--gxlt-csv"): ["evaluate", "qa", str(folder), "--mlqa", str(folder), "--gxlt"],
        ("eval-cwr", "--json"): ["eval-cwr", str(text), "--model", nomodel],
        ("eval-cwr", "--csv"): ["eval-cwr", str(text), "--model", nomodel],
        ("modularity", "--json"): ["modularity", str(text), "--model", nomodel],
        ("modularity", "--csv"): ["modularity", str(text), "--model", nomodel],
        ("parallel-spans", "--output"): ["parallel-spans"],
        ("kb build", "--output"): ["kb", "build", "--embedded"],
        ("kb build", "--corpus"): ["kb", "build", "--wikidata", str(text), "-o", str(tmp / "kb.sqlite")],
        ("kb info", "--json"): ["kb", "info", str(tmp / "no.sqlite")],
        ("kb info", "--csv"): ["kb", "info", str(tmp / "no.sqlite")],
        ("kb lookup", "--json"): ["kb", "lookup", str(tmp / "no.sqlite"), "Tokyo"],
        ("kb vocab", "--output"): ["kb", "vocab", str(tmp / "no.sqlite")],
        ("kb vocab-import", "--output"): ["kb", "vocab-import", str(text)],
        ("kb vocab-export", "--output"): ["kb", "vocab-export", str(text)],
        ("knowbert train", "--output"): ["knowbert", "train"],
        ("index build", "--output"): ["index", "build", str(text), "--model", nomodel],
        ("index search", "--json"): ["index", "search", str(folder), "--text", "Tokyo"],
    }


def test_every_output_option_is_covered(tmp_path):
    options = {
        (name, opt)
        for name, command in _commands()
        for param in command.params
        for opt in param.opts
        if opt in OUTPUT_FLAGS
    }
    assert options == set(_cases(tmp_path))


@pytest.mark.parametrize("case", sorted(_cases(Path("/unused"))), ids=" ".join)
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, case):
    (tmp_path / "in.txt").write_text("Tokyo is in Japan.\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    blocked = tmp_path / "blocked"
    blocked.write_text("a regular file, not a folder\n")
    out = blocked / "out"
    argv = [*_cases(tmp_path)[case], case[1], str(out)]
    res = CliRunner().invoke(app, argv)
    assert isinstance(res.exception, OutputError), (argv, res.output, res.exception)
    assert str(res.exception) == f"cannot write {out}: {blocked} is a file, not a folder"


def test_check_writable_asks_the_file_system(tmp_path, monkeypatch):
    out = tmp_path / "new" / "deeper" / "out.json"
    assert files.check_writable(out) == out and out.parent.is_dir() and list(out.parent.iterdir()) == []

    def read_only(path, flags, mode=0o777):
        raise OSError(errno.EROFS, "Read-only file system", path)

    monkeypatch.setattr(files.os, "open", read_only)
    with pytest.raises(OutputError, match=r"cannot write .*out\.json: Read-only file system; choose a folder"):
        files.check_output(out)


def test_a_write_error_names_the_output_and_cleaning_up_never_hides_it(tmp_path, monkeypatch):
    out = tmp_path / "r.json"

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(src))

    def unremovable(path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(files.os, "replace", full_disk)
    monkeypatch.setattr(files, "remove", unremovable)
    with pytest.raises(OutputError, match=r"cannot write .*r\.json: No space left on device; free some space") as e:
        files.write_json({"a": 1}, out)
    assert isinstance(e.value.__cause__, OSError) and e.value.__cause__.errno == errno.ENOSPC
    assert not out.exists()


def test_other_errors_pass_through_atomic_writes(tmp_path):
    with pytest.raises(KeyError), files.atomic_text(tmp_path / "x.txt") as f:
        f.write("half")
        raise KeyError("a bug is not an output error")
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_prints_an_unchecked_file_error_as_one_line(tmp_path, monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "cache" / "x.sqlite"))

    monkeypatch.setattr(kb, "lookup", refuse)
    monkeypatch.setattr(sys, "argv", ["mluke", "kb", "lookup", "embedded", "Tokyo"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path / 'cache' / 'x.sqlite'}: Permission denied\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder (mode bits do not stop it)")
def test_a_read_only_folder_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="Permission denied"):
            files.check_output(ro / "out.json")
    finally:
        ro.chmod(0o755)


def test_a_failed_database_build_raises_its_own_error_not_the_clean_up_one(tmp_path, monkeypatch):
    def unremovable(path, missing_ok=False):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    with pytest.raises(KeyError, match="the first error"), kb.EntityDB.create(tmp_path / "kb.sqlite") as w:
        w.add_languages(["en"])
        monkeypatch.setattr(Path, "unlink", unremovable)  # the folder turned read-only during the build
        raise KeyError("the first error")
