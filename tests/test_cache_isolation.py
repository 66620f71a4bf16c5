"""The suite never writes into the user's cache: $MLUKE_HOME is set before any fixture runs, and a run that
writes where the user's cache would be fails (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb.cache import cache_dir
from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def module_cache() -> Path:
    """What a module-scoped fixture sees: it runs before any function-scoped (autouse) fixture."""
    return cache_dir()


def test_module_fixtures_already_use_the_session_cache(module_cache):
    assert conftest.SESSION_HOME is not None and module_cache == conftest.SESSION_HOME
    user = Path.home() / ".cache" / "mluke"
    assert module_cache != user and user not in module_cache.parents


@pytest.mark.skipif(os.environ.get("MLUKE_TEST_LEAK") != "1", reason="run by the next test, in its own session")
def test_writes_where_the_user_cache_would_be(monkeypatch):
    monkeypatch.delenv("MLUKE_HOME")
    (cache_dir() / "leaked.txt").write_text("a test without $MLUKE_HOME\n")


def test_a_session_that_writes_into_the_user_cache_fails():
    env = {**os.environ, "MLUKE_TEST_LEAK": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         f"{__file__}::test_writes_where_the_user_cache_would_be"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr  # the test itself passes ...
    assert proc.returncode == 1  # ... and the run fails
    assert "the tests wrote into the user's cache folder" in proc.stdout and "mluke/leaked.txt" in proc.stdout
