"""The project's promises about itself: CI runs the README's test command; packages stay layered."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README must show the test command after <!-- test-command -->"
    command = match.group(1).strip()
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the code (imports inside functions count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


#: Who may import what, outermost layer first: a module matching the first prefix may not import any
#: module matching one of the others. The CLI (``mluke.cli``) is the outermost layer, the only one that
#: uses all three packages; nothing but ``python -m mluke`` imports it.
RULES = [
    ("kb", ("mluke", "probes", "torch", "transformers")),
    ("kb.db", ("kb.mentions", "kb.sources", "kb.vocab", "kb.entities")),
    ("kb.mentions", ("kb.sources", "kb.vocab", "kb.entities")),
    ("kb.sources", ("kb.mentions", "kb.entities")),
    ("kb.vocab", ("kb.mentions", "kb.sources", "kb.entities")),
    ("mluke", ("probes", "mluke.cli")),
    ("probes", ("mluke.cli",)),
]
SOURCES = sorted(p for package in ("kb", "mluke", "probes") for p in (ROOT / package).rglob("*.py"))


def _inside(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("layer, forbidden", RULES, ids=[r[0] for r in RULES])
def test_data_flows_one_way(layer, forbidden):
    broken = []
    for path in SOURCES:
        module = _module(path)
        if not _inside(module, layer) or _inside(module, "mluke.cli") or module == "mluke.__main__":
            continue  # the outermost layer
        broken += [f"{module} imports {name}" for name in sorted(_imports(path))
                   if any(_inside(name, f) for f in forbidden)]
    assert not broken

