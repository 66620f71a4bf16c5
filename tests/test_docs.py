"""The documentation's references into the test suite stay true: every test named in "When things go wrong"
(docs/troubleshooting.md, ``path.py::test_name``, then ``::other_test`` for the same file) exists."""

import re
import unicodedata
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


RESULTS = ROOT / "benchmarks" / "RESULTS.md"


def _slug(heading: str) -> str:
    """The anchor the site (Python-Markdown's toc) gives a heading: ASCII word characters joined by ``-``."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page (outside code fences); repeats get ``_1``, ``_2``... as on the site."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    seen: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+?)#*$", text, re.M):
        slug = base = _slug(heading)
        n = 0
        while slug in seen:
            n += 1
            slug = f"{base}_{n}"
        seen.add(slug)
    return seen


def _broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file, or heading anchor in a Markdown file, does not exist."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not checked offline
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
            broken.append(target)
    return broken


def test_results_is_a_short_front_page_whose_links_resolve() -> None:
    """benchmarks/RESULTS.md holds the headline tables only (the rest is on the topic pages) and no link is broken."""
    lines = RESULTS.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"{RESULTS}: {len(lines)} lines; move method notes and history to docs/benchmarks/"
    assert not _broken_links(RESULTS), f"{RESULTS}: broken links {_broken_links(RESULTS)}"


def test_every_benchmark_page_is_linked_from_results_and_in_the_site_navigation() -> None:
    """(The topic pages' own links, some to pages generated at build time, are checked by ``mkdocs build --strict``.)"""
    results = RESULTS.read_text(encoding="utf-8")
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted((ROOT / "docs" / "benchmarks").glob("*.md"))
    assert len(pages) >= 10
    for page in pages:
        assert f"../docs/benchmarks/{page.name}" in results, f"{RESULTS} does not link {page.name}"
        assert f"benchmarks/{page.name}" in nav, f"mkdocs.yml's nav does not show docs/benchmarks/{page.name}"


def test_the_anchor_checker_finds_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Cloze scoring (issue 4)\n\n## Cloze scoring (issue 4)\n", "utf-8")
    page = tmp_path / "b.md"
    page.write_text(
        "[x](a.md#cloze-scoring-issue-4) [y](a.md#cloze-scoring-issue-4_1) [z](a.md#nope) [w](c.md)", "utf-8"
    )
    assert _broken_links(page) == ["a.md#nope", "c.md"]
