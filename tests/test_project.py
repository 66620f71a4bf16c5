"""The project's promises about itself: CI runs the README's test command; packages stay layered."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README must show the test command after <!-- test-command -->"
    command = match.group(1).strip()
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _imports(package: str, skip: str = "") -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        if skip and skip in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_data_flows_one_way():
    assert not {"mluke", "probes", "torch", "transformers"} & _imports("kb")
    assert "probes" not in _imports("mluke", skip="cli")  # the CLI is the outermost layer
