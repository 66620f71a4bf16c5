"""Shared fixtures: an isolated cache folder, the embedded kb (built once), a tiny hand-made kb and an in-process
CLI runner."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import kb

if TYPE_CHECKING:
    from collections.abc import Iterator

    from click.testing import Result


#: The cache folder of the whole session, set before any fixture runs (see pytest_configure).
SESSION_HOME: Path | None = None
#: $XDG_CACHE_HOME during the tests: mluke's fallback cache, SENTINEL / "mluke", must stay empty.
SENTINEL: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Never touch the user's cache (``$MLUKE_HOME`` or ``~/.cache/mluke``): before any fixture, module- and
    session-scoped ones included, ``$MLUKE_HOME`` points at a folder of this session, and the fallback
    (``$XDG_CACHE_HOME/mluke``, used when a test removes ``$MLUKE_HOME``) at a sentinel folder that
    :func:`pytest_sessionfinish` checks stayed empty. Other tools' caches keep their folders."""
    global SESSION_HOME, SENTINEL
    root = Path(tempfile.mkdtemp(prefix="mluke-tests-"))
    SESSION_HOME, SENTINEL = root / "mluke-home", root / "user-cache-sentinel"
    SESSION_HOME.mkdir()
    SENTINEL.mkdir()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ.setdefault("HF_HOME", str(cache / "huggingface"))  # where they were before the sentinel
    os.environ.setdefault("TORCH_HOME", str(cache / "torch"))
    os.environ.setdefault("MPLCONFIGDIR", str(cache / "matplotlib"))  # its font cache, not rebuilt per session
    os.environ["XDG_CACHE_HOME"] = str(SENTINEL)
    os.environ["MLUKE_HOME"] = str(SESSION_HOME)
    # A background job of a non-interactive shell (`bash .ci/run &`) starts with SIGINT ignored, and the processes
    # the tests start would inherit that: the tests that press Ctrl-C on a command need Python's default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if anything was written where the user's cache would be."""
    if SENTINEL is None:
        return
    leaked = sorted(str(p.relative_to(SENTINEL)) for p in (SENTINEL / "mluke").rglob("*"))
    if leaked:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (
            "the tests wrote into the user's cache folder (a test or fixture ran without $MLUKE_HOME): "
            + ", ".join(leaked[:10])
        )
        if reporter is not None:
            reporter.write_line(f"ERROR: {message}", red=True)
        else:
            print(f"ERROR: {message}", file=sys.stderr)


def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION_HOME is not None:
        shutil.rmtree(SESSION_HOME.parent, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with the session's cache folder (a test that changes $MLUKE_HOME changes it for
    itself only); one cache is shared across the session."""
    assert SESSION_HOME is not None
    monkeypatch.setenv("MLUKE_HOME", str(SESSION_HOME))


@pytest.fixture(autouse=True)
def _forget_built() -> Iterator[None]:
    """``mluke.link`` and ``mluke.probe`` keep what they build for their next call (:mod:`mluke.reuse`): each test
    starts without what earlier tests built (a test's own calls still reuse it)."""
    yield
    from mluke.reuse import clear_cache

    clear_cache()


@pytest.fixture(scope="session")
def embedded_db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("embedded") / "embedded.sqlite"
    return kb.build_embedded(path)


@pytest.fixture(scope="session")
def embedded_db(embedded_db_path: Path) -> kb.EntityDB:
    return kb.EntityDB(embedded_db_path)


def arithmetic_seed() -> int | None:
    """``MLUKE_TEST_SEED``: the seed of the trained tiny models' random start (the tiny demo's start, masking and
    batch order; the tiny checkpoint's weights), or None for their own. Another seed changes what they learn as another
    machine's arithmetic (thread count, CPU kernels) would: the suite must pass with any (docs/contributing.md)."""
    seed = os.environ.get("MLUKE_TEST_SEED")
    return int(seed) if seed else None


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory: pytest.TempPathFactory, embedded_db: kb.EntityDB) -> Path:
    """The demo model at the ``tiny`` preset (one epoch, a few seconds), trained once per session.

    Its weights depend on the machine's arithmetic (thread count, CPU kernels), so no test may rely on what exactly it
    learned (see :func:`arithmetic_seed`).
    """
    from mluke.demo.data import resolve_preset
    from mluke.demo.model import train_demo

    preset = resolve_preset("tiny")
    if (seed := arithmetic_seed()) is not None:
        preset = dataclasses.replace(preset, init_seed=seed)
    return train_demo(tmp_path_factory.mktemp("demo") / "tiny", preset=preset, db=embedded_db, progress=False)


def write_tiny_db(path: Path) -> Path:
    """A small database in the shape a Wikipedia + Wikidata build produces."""
    with kb.EntityDB.create(path, provenance={"builder": "tests"}) as w:
        w.add_languages(["en", "ja", "ar"])
        for key, kind in [
            ("Q17", "country"),
            ("Q1490", "city"),
            ("Q35", "country"),
            ("Q1748", "city"),
            ("Q5287", "language"),
        ]:
            w.add_entity(key, kind)
        w.add_title("en", "Japan", "Q17")
        w.add_title("ja", "日本", "Q17")
        w.add_title("ar", "اليابان", "Q17")
        w.add_title("en", "Tokyo", "Q1490")
        w.add_title("ja", "東京都", "Q1490")
        w.add_title("en", "Denmark", "Q35")
        w.add_title("en", "Copenhagen", "Q1748")
        w.add_title("en", "Japanese language", "Q5287")
        w.add_title("ja", "日本語", "Q5287")
        # redirects: two hops, a loop and a dangling one
        w.add_redirect("en", "Nippon", "State of Japan")
        w.add_redirect("en", "State_of_Japan", "Japan")
        w.add_redirect("en", "Loop A", "Loop B")
        w.add_redirect("en", "Loop B", "Loop A")
        w.add_redirect("en", "Nowhere", "Missing page")
        w.add_label("Q17", "en", "Japan")
        w.add_aliases("Q17", "en", ["Nihon", "JP"])
        w.add_label("Q1490", "en", "Tokyo")
        w.add_label("Q1490", "ja", "東京")
        w.add_label("Q17", "ja", "日本")
        w.add_label("Q5287", "en", "Japanese")
        w.add_label("Q5287", "ja", "日本語")
        w.add_label("Q35", "en", "Denmark")
        w.add_label("Q1748", "en", "Copenhagen")
        w.add_aliases("Q1748", "en", ["Tokyo"])  # an alias shared with another entity
        w.add_property("P36", datatype="wikibase-item", labels={"en": "capital", "ja": "首都"})
        w.add_property("P37", labels={"en": "official language"})
        w.add_fact("Q17", "P36", "Q1490")
        w.add_fact("Q35", "P36", "Q1748")
        w.add_fact("Q17", "P37", "Q5287")
        w.add_template("P36", "en", "The capital of [X] is [Y].")
        w.add_template("P36", "ja", "[X]の首都は[Y]です。")
        w.add_anchor("en", "Tokyo", "Q1490", 90)
        w.add_anchor("en", "Tokyo", "Q1748", 2)
        w.add_anchor("en", "Tokyo", "Q1490", 10)  # counts add up
        w.add_surface("en", "Tokyo", link_docs=40, text_docs=100)
        w.add_surface("en", "the", link_docs=0, text_docs=0)
        w.add_entity_links("Q17", "en", 500)
        w.add_entity_links("Q17", "ja", 300)
        w.add_entity_links("Q1490", "en", 400)
        w.add_entity_links("Q35", "en", 50)
        w.add_source("test", "conftest", lang="en", note="hand-written")
    return path


@pytest.fixture
def tiny_db(tmp_path: Path) -> kb.EntityDB:
    db = kb.EntityDB(write_tiny_db(tmp_path / "tiny.sqlite"))
    yield db
    db.close()


class Cli:
    """Runs the ``mluke`` CLI in-process. Positional arguments pass as they are (as strings); each keyword becomes an
    option after them: ``lang="ja"`` is ``--lang ja``, ``nil_threshold=0`` is ``--nil-threshold 0``, ``True`` a bare
    flag and a list a repeated option; ``input`` is the text on stdin. ``bind`` fixes leading arguments and default
    options, so that a test names only what differs between its runs."""

    def __init__(self, *args: object, **options: object) -> None:
        self.args, self.options = args, options

    def __call__(self, *args: object, input: str | None = None, **options: object) -> Result:
        from typer.testing import CliRunner

        from mluke.cli import app

        argv = [str(a) for a in (*self.args, *args)]
        for name, value in {**self.options, **options}.items():
            flag = "--" + name.replace("_", "-")
            for v in value if isinstance(value, list) else [value]:
                argv += [flag] if v is True else [flag, str(v)]
        return CliRunner().invoke(app, argv, input=input)

    def bind(self, *args: object, **options: object) -> Cli:
        return Cli(*self.args, *args, **{**self.options, **options})


@pytest.fixture(scope="session")
def cli() -> Cli:
    """The CLI runner: ``cli("link", "-", lang="en", model=tiny_demo, db=path, candidates=True, input="Paris.\\n")``."""
    return Cli()


@pytest.fixture
def demo_cli(cli: Cli, tiny_demo: Path, embedded_db_path: Path) -> Cli:
    """The CLI runner with ``--model`` the tiny demo model and ``--db`` the embedded kb."""
    return cli.bind(model=tiny_demo, db=embedded_db_path)
