"""Options are checked before any work, in the command line's own terms, and help reads as the user types.

On a fresh ``MLUKE_HOME`` a command that needs the demo model trains it first (minutes): every bad option
must be refused before that, so these tests run each command on an empty cache folder and check that it
stayed empty (nothing trained, nothing built) and that the refusal names the flag.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from kb.errors import MlukeError
from mluke.cli import app, checks

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_the_checks_accept_what_the_library_accepts():
    from mluke.demo.data import PRESETS
    from mluke.options import METHODS
    from mluke.spans import FEATURES
    from probes.retrieval import KINDS
    from probes.transfer.runs.qa import MLQA_LANGUAGES

    assert tuple(PRESETS) == checks.PRESETS
    assert PRESETS["demo"].hidden_size == checks.DEMO_HIDDEN_SIZE
    assert checks.LINK_METHODS == METHODS
    assert checks.SPAN_FEATURES == FEATURES
    assert checks.INDEX_KINDS == KINDS
    assert checks.MLQA_LANGUAGES == MLQA_LANGUAGES


def _walk(cmd, path=()):
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _walk(sub, (*path, name))


ALL = list(_walk(typer.main.get_command(app)))


@pytest.mark.parametrize("path, cmd", ALL, ids=[" ".join(p) or "mluke" for p, _ in ALL])
def test_help_has_a_summary_and_no_type_placeholders(path, cmd):
    """Every command and group, walked recursively: a one-line summary in its parent's list, and no
    ``<bool>`` (or any ``<type>``) after a flag, which suggested ``--overwrite true``."""
    result = runner.invoke(app, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "<bool>" not in text
    lines = text.splitlines()
    usage = next(i for i, line in enumerate(lines) if line.startswith("Usage:"))
    summary = next(line.strip() for line in lines[usage + 1 :] if line.strip())
    assert len(summary) > 15 and not summary.startswith(("Options", "Arguments")), summary
    if path:
        short = cmd.get_short_help_str(limit=80)
        assert len(short) > 15 and not short.endswith(("e.g.", "...")), f"{path}: summary {short!r}"
    for param in cmd.params:
        if getattr(param, "is_flag", False):
            for opt in param.opts:
                assert f"{opt} <" not in text, f"{opt} shows a value placeholder"


def test_probe_help_fits_a_screen_or_two():
    result = runner.invoke(app, ["probe", "--help"], terminal_width=80)
    assert result.exit_code == 0
    assert len(result.output.splitlines()) <= 70  # was 138 lines of boxes at 80 columns
    assert "--overwrite  " in result.output  # a plain flag


def test_version():
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"mluke {version('mluke')}"


def test_finetune_summary_names_every_task():
    result = runner.invoke(app, ["--help"], terminal_width=100)
    line = next(line for line in result.output.splitlines() if line.strip().startswith("finetune"))
    assert "NER" in line and "relation" in line and "QA" in line
    assert "'tiny'" in runner.invoke(app, ["pretrain", "--help"], terminal_width=200).output


SPANS = '{"id": "s1", "lang": "en", "text": "Paris is in France.", "span": [0, 5], "surface": "Paris"}\n'

BAD = [
    (["link", "{text}", "--lang", "xx"], "--lang xx"),
    (["link", "{text}", "--device", "cuda"], "--device 'cuda'"),
    (["link", "{text}", "--dtype", "fp8"], "--dtype fp8"),
    (["link", "{text}", "--method", "best"], "--method best"),
    (["link", "{text}", "--nil-threshold", "2"], "--nil-threshold 2.0: expected a number from 0 to 1"),
    (["eval-link", "{spans}", "--nil-threshold", "-0.5"], "--nil-threshold -0.5"),
    (["link", "{text}", "--prior-weight", "nan"], "--prior-weight nan: expected a finite number of at least 0"),
    (["link", "{text}", "--prior-weight", "inf"], "--prior-weight inf: expected a finite number"),
    (["link", "{text}", "--prior-weight", "-3"], "--prior-weight -3.0: expected a finite number of at least 0"),
    (["link", "{text}", "--nil-threshold", "nan"], "--nil-threshold nan: expected a number from 0 to 1"),
    (["probe", "[X] is the capital of [Y]", "--top-k", "99999999999"], "--top-k 99999999999: expected a whole"),
    (["probe", "[X] is the capital of [Y]", "--max-pieces", "0"], "--max-pieces 0: expected a whole number"),
    (["probe", "[X] is the capital of [Y]", "--beam", "5000"], "--beam 5000: expected a whole number from 1"),
    (["probe", "[X] is the capital of [Y]", "--threshold", "nan"], "--threshold nan: expected a number"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--learning-rate", "nan"], "--learning-rate nan"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--learning-rate", "inf"], "--learning-rate inf"),
    (["knowbert", "train", "-o", "{out}", "--learning-rate", "0"], "--learning-rate 0.0: expected a finite number"),
    (["knowbert", "train", "-o", "{out}", "--batch-size", "0"], "--batch-size 0: expected at least 1"),
    (["kb", "build", "--embedded", "--workers", "0"], "--workers 0: expected at least 1"),
    (["kb", "build", "--embedded", "--min-city-population", "-1"], "--min-city-population -1: expected at least 0"),
    (["probe", "[X] is the capital of [Y]", "--lang", "xx"], "--lang xx"),
    (["probe", "[X] is the capital of [Y]", "--mode", "entities"], "--mode entities"),
    (["probe", "[X] is the capital of [Y]", "--top-k", "0"], "--top-k 0"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--device", "cuda"], "--device 'cuda'"),
    (["finetune", "pos", "--train", "t", "--dev", "d", "-o", "o"], "TASK pos: expected one of ner, re, qa"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--epochs", "0"], "--epochs 0"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--learning-rate", "-1"], "--learning-rate -1.0"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--batch-size", "0"], "--batch-size 0"),
    (["finetune", "ner", "--train", "t", "--dev", "d", "-o", "o", "--features", "both"], "--features both"),
    (["eval-cwr", "{spans}", "--device", "cuda"], "--device 'cuda'"),
    (["eval-cwr", "{spans}", "--features", "foo"], "--features foo"),
    (["index", "build", "{spans}", "-o", "{out}", "--device", "cuda"], "--device 'cuda'"),
    (["index", "build", "{spans}", "-o", "{out}", "--kind", "foo"], "--kind foo"),
    (["index", "build", "{spans}", "-o", "{out}", "--kind", "ivfpq", "--pq-m", "7"], "--pq-m 7: must divide"),
    (["index", "search", "{spans}", "--text", "Paris"], "not an index folder"),
    (["modularity", "{spans}", "--langs", "de,xx"], "--langs xx"),
    (["modularity", "{spans}", "--langs", "en"], "at least one language besides"),
    (["pretrain", "--preset", "foo"], "--preset foo: expected one of demo, tiny"),
    (["evaluate", "qa", "{out}", "--mlqa", "{out}", "--langs", "en,ja"], "--langs ja: not a language of MLQA"),
    (["evaluate", "qa", "{out}", "--xquad", "{out}", "--gxlt"], "--gxlt"),
    (["evaluate", "ner", "{out}"], "--test"),
    (["eval-link", "{out}", "--methods", "prior,best"], "--methods best"),
    (["corpus", "p", "--tokenizer", "t", "--vocab", "v", "-o", "o", "--unknown-links", "keep"], "--unknown-links keep"),
]


def _no_gpu(case):
    """``--device cuda`` is only a bad option where there is no GPU."""
    args, _ = case
    if "cuda" in args:
        import torch

        return pytest.param(
            *case, marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here"), id=" ".join(args[:4])
        )
    return pytest.param(*case, id=" ".join(args[:4]))


@pytest.mark.parametrize("args, message", [_no_gpu(c) for c in BAD])
def test_bad_options_are_refused_before_any_work(tmp_path, monkeypatch, args, message):
    home = tmp_path / "fresh-home"
    monkeypatch.setenv("MLUKE_HOME", str(home))
    (tmp_path / "text.txt").write_text("Tokyo is the capital of Japan.\n", encoding="utf-8")
    (tmp_path / "spans.jsonl").write_text(SPANS, encoding="utf-8")
    filled = [a.format(text=tmp_path / "text.txt", spans=tmp_path / "spans.jsonl", out=tmp_path / "out") for a in args]
    started = time.perf_counter()
    result = runner.invoke(app, filled)
    took = time.perf_counter() - started
    assert isinstance(result.exception, MlukeError), result.output
    assert message in result.exception.for_cli()
    assert "=" not in result.exception.for_cli().split(":")[0]  # the flag, not a Python keyword
    assert not home.exists() or not list(home.iterdir()), "work was done before the refusal"
    assert took < 20, f"took {took:.1f} s"


def test_refusals_on_a_fresh_cache_take_seconds_in_a_new_process(tmp_path):
    """What a user sees: one line naming the flag, exit code 1, no traceback, in seconds (an interpreter
    start on a busy 2-core machine included), and nothing trained."""
    home = tmp_path / "fresh-home"
    (tmp_path / "text.txt").write_text("Tokyo is the capital of Japan.\n", encoding="utf-8")
    env = {"MLUKE_HOME": str(home), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    for args, message in [
        (["link", str(tmp_path / "text.txt"), "--lang", "xx"], "error: --lang xx"),
        (["pretrain", "--preset", "foo"], "error: --preset foo"),
    ]:
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "mluke", *args], capture_output=True, text=True, env=env, timeout=120
        )
        took = time.perf_counter() - started
        assert proc.returncode == 1 and proc.stderr.startswith(message), proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert took < 30, f"{args}: {took:.1f} s"
    assert not home.exists() or not list(home.iterdir())


REFUSED_WITHOUT_TORCH = [
    (["link", "{missing}", "--lang", "en"], "error: {missing}: no such file"),
    (["probe", "[X] is the capital of", "--lang", "en"], "error: template: [Y] missing in '[X] is the capital of'"),
    (["probe", "[X] likes [Y]."], "error: the template '[X] likes [Y].' matches no relation template"),
    (["eval-mlama", "{missing}"], "error: FOLDER {missing}: no such folder (expected the mLAMA data folder)"),
    (["finetune", "ner", "--train", "{missing}", "--dev", "{text}", "-o", "{out}"], "error: --train {missing}: no"),
    (["kb", "vocab", "{missing}", "-o", "{out}"], "error: {missing}"),
    (["link", "{text}", "--jsonl", "{blocked}/o.jsonl"], "error: cannot write {blocked}/o.jsonl: {blocked} is a"),
]


@pytest.mark.parametrize(
    "args, message", REFUSED_WITHOUT_TORCH, ids=[" ".join(a[:2]) for a, _ in REFUSED_WITHOUT_TORCH]
)
def test_cheap_refusals_come_before_torch_is_imported(tmp_path, embedded_db_path, args, message):
    """A missing input, an output that cannot be written, a bad template: refused in a new process without
    importing torch or transformers (seconds of CPU), one line, exit status 1."""
    home = tmp_path / "home"
    home.mkdir()
    from kb.sources.embedded import embedded_path

    env = {"MLUKE_HOME": str(home), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    subprocess.run(["cp", str(embedded_db_path), str(home / embedded_path().name)], check=True)
    (tmp_path / "text.txt").write_text("Tokyo is the capital of Japan.\n", encoding="utf-8")
    (tmp_path / "blocked").write_text("a file, not a folder\n")
    paths = {"missing": tmp_path / "missing.txt", "out": tmp_path / "out", "text": tmp_path / "text.txt"}
    paths["blocked"] = tmp_path / "blocked"
    argv = [a.format(**paths) for a in args]
    code = (
        "import sys\nfrom mluke.cli import main\nsys.argv = ['mluke', *sys.argv[1:]]\n"
        "try:\n    main()\nfinally:\n"
        "    print('heavy:', sorted(m for m in ('torch', 'transformers') if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and lines[0].startswith(message.format(**paths)), proc.stderr
    assert lines[1:] == ["heavy: []"], proc.stderr
