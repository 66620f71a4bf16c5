"""The documentation's references into the test suite stay true: every test named in "When things go wrong"
(docs/troubleshooting.md, ``path.py::test_name``, then ``::other_test`` for the same file) exists."""

import importlib.util
import re
import subprocess
import sys
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


def _code_map():
    """``scripts/docs/code_map.py`` imported by path (``scripts/`` is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("code_map", ROOT / "scripts" / "docs" / "code_map.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_code_map_of_the_contributing_page_matches_the_docstrings() -> None:
    """What ``.ci/run`` checks: docs/contributing.md's map is the one the docstrings give (no imports: fast)."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs" / "code_map.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, f"stale code map; run `python scripts/docs/code_map.py`:\n{run.stdout}{run.stderr}"
    assert "code_map.py --check" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_code_map_walks_any_package_tree_and_says_what_is_stale(tmp_path: Path, capsys) -> None:
    code_map = _code_map()
    for name, doc in [
        ("kb/__init__.py", "kb: the knowledge side. More text."),
        ("kb/names.py", "Names, e.g. titles. Second sentence."),
        ("mluke/__init__.py", "mluke: the model side."),
        ("mluke/deep/__init__.py", "A sub-package moved in later."),
        ("mluke/deep/part.py", "Uses :class:`kb.Names` and ``a|b`` for p(e|m)."),
        ("probes/__init__.py", "probes: evaluations."),
        ("probes/plain.py", ""),
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f'"""{doc}"""\n' if doc else "x = 1\n", encoding="utf-8")
    (tmp_path / "kb" / "data").mkdir()  # not a package: left out
    page = tmp_path / "docs" / "contributing.md"
    page.parent.mkdir()
    page.write_text("# Contributing\n\nintro\n\n<!-- code-map -->\nold map\n<!-- /code-map -->\n\nafter\n", "utf-8")

    assert code_map.main(["--root", str(tmp_path), "--check"]) == 1
    assert "-old map" in capsys.readouterr().out
    assert code_map.main(["--root", str(tmp_path)]) == 0
    assert code_map.main(["--root", str(tmp_path), "--check"]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Contributing\n\nintro\n\n<!-- code-map -->\n") and text.endswith(
        "<!-- /code-map -->\n\nafter\n"
    )
    assert "### `mluke.deep`\n\nA sub-package moved in later." in text
    assert "| `mluke.deep.part` | Uses `kb.Names` and `a|b` for p(e\\|m). |" in text
    assert "| `kb.names` | Names, e.g. titles. |" in text
    assert "| `probes.plain` | (no docstring) |" in text
    assert "kb.data" not in text

    (tmp_path / "mluke" / "deep" / "new.py").write_text('"""A module added later."""\n', encoding="utf-8")
    assert code_map.main(["--root", str(tmp_path), "--check"]) == 1
    assert "+| `mluke.deep.new` | A module added later. |" in capsys.readouterr().out
