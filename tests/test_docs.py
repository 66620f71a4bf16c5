"""The documentation's references into the test suite stay true: every test named in "When things go wrong"
(docs/troubleshooting.md, ``path.py::test_name``, then ``::other_test`` for the same file) exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _named_tests(page: Path) -> list[tuple[str, str]]:
    """(test file under tests/, test function) for each reference on the page, in order."""
    out: list[tuple[str, str]] = []
    current = ""
    for m in re.finditer(r"`(?:([\w/]+\.py))?::(\w+)`|`([\w/]+/test_\w+\.py)`", page.read_text(encoding="utf-8")):
        if m.group(3):
            current = m.group(3)
            continue
        current = m.group(1) or current
        out.append((current, m.group(2)))
    return out


def test_every_test_named_by_the_troubleshooting_page_exists() -> None:
    refs = _named_tests(ROOT / "docs" / "troubleshooting.md")
    assert len(refs) >= 30, "the page names the tests that check each error"
    missing = []
    for path, name in refs:
        file = ROOT / "tests" / path
        if not file.is_file() or not re.search(rf"^(?:async )?def {name}\b", file.read_text("utf-8"), re.M):
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/troubleshooting.md names tests that do not exist: {missing}"
