"""Every benchmark script has a ``--smoke`` mode, and CI runs them all through ``benchmarks/smoke.py``.

Static checks (the scripts import torch: running each one's ``--help`` would take seconds apiece); the smoke runs
themselves are CI's ``benchmarks/smoke.py`` step.
"""

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _module(name: str):
    """``benchmarks/<name>.py`` imported by path (``benchmarks/`` is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMOKE = _module("smoke")
COMMON = _module("common")


def _called(tree: ast.AST) -> set[str]:
    """The names of the functions called in ``tree`` (``f(...)`` and ``x.f(...)``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return out


def _reads_smoke(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "smoke" for n in ast.walk(tree))


def _common_functions(start: set[str], own) -> set[str]:
    """The functions of ``common.py`` in ``start``, those for which ``own(node)`` holds, and those calling one of
    them, transitively."""
    tree = ast.parse((BENCHMARKS / "common.py").read_text(encoding="utf-8"))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    found = set(start) | {n.name for n in functions if own(n)}
    while more := {n.name for n in functions if _called(n) & found} - found:
        found |= more
    return found


#: the helpers of ``common.py`` that give a parser ``--smoke``, and those that act on ``args.smoke``
DEFINE = _common_functions({"add_smoke"}, lambda node: False)
ACT = _common_functions(set(), _reads_smoke)


def test_the_runner_takes_the_scripts_and_leaves_out_helpers():
    names = [p.name for p in SMOKE.scripts()]
    assert "model_scoring.py" in names and "vocab_cold_start.py" in names
    assert "common.py" not in names and "smoke.py" not in names
    assert len(names) == len(set(names)) >= 25


def test_the_common_parsers_accept_smoke():
    assert {"add_smoke", "benchmark_parser", "base_shape_args", "miniature_parser"} <= DEFINE
    assert {"base_shape_args", "smoke_miniature", "knowbert_models"} <= ACT
    assert COMMON.benchmark_parser(None, Path("work")).parse_args(["--smoke"]).smoke
    assert not COMMON.benchmark_parser(None, Path("work")).parse_args([]).smoke
    assert COMMON.miniature_parser(None, "qa").parse_args(["--smoke"]).smoke


@pytest.mark.parametrize("script", [p.name for p in SMOKE.scripts()])
def test_every_benchmark_script_has_a_smoke_mode(script):
    """The script defines ``--smoke`` (itself or through a parser of ``common.py``) and acts on ``args.smoke``
    (itself or through a helper of ``common.py``)."""
    tree = ast.parse((BENCHMARKS / script).read_text(encoding="utf-8"))
    defines = _called(tree) & DEFINE or any(
        isinstance(n, ast.Constant) and n.value == "--smoke" for n in ast.walk(tree)
    )
    reads = _reads_smoke(tree) or _called(tree) & ACT
    assert defines, f"benchmarks/{script} has no --smoke option (give it one: common.add_smoke)"
    assert reads, f"benchmarks/{script} never reads args.smoke: its --smoke would change nothing"


def test_ci_runs_the_smoke_runner():
    assert ".venv/bin/python benchmarks/smoke.py" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
