"""The documentation stays true to the code: every test named in "When things go wrong" (docs/troubleshooting.md,
``path.py::test_name``, then ``::other_test`` for the same file) exists; RESULTS is a short front page whose links
resolve; the code map matches the docstrings; every output the docs show is the one ``scripts/docs/outputs.py``
generated with the current demo model and kb (no demo training here: the marked texts are checked against the
hashes the script recorded in docs/outputs.json); every page and section a ``--help`` text names exists."""

import importlib.util
import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any, cast

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


# -- generated outputs (scripts/docs/outputs.py) ----------------------------------------------------

#: Numbers and lines that scripts/docs/outputs.py generates: wherever they appear in the docs, they must be
#: inside an output marker, so a hand-copied one cannot drift. (file glob, pattern)
GENERATED_ELSEWHERE = [
    ("*.md", r"\d+ of the \d+ capitals"),
    ("*.md", r"\d+ of the \d+\s+right"),
    ("*.md", r"\[X\]&\[Y\] for \d+ of \d+\]"),
    ("*.md", r"step [\d,]+ of [\d,]+; the checkpoint is kept in \.\.\.demo-model"),
    ("*.md", r"the demo model's training at step [\d,]+ of [\d,]+"),
    ("*.md", r"subject\(s\) without a '\w+' label skipped"),
    ("*.md", r"^# 東京 geonames"),
    ("*.md", r"^# \d+ \d+ \w+ \[\('geonames"),
    ("README.md", r"P@1 \d\.\d+"),
    ("probing.md", r"P@1 \d\.\d+"),
    ("probing.md", r"\d+ entities \(\d+ countries"),
]


def _outputs_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_outputs", ROOT / "scripts" / "docs" / "outputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OUTPUTS = _outputs_module()


def _record() -> dict[str, Any]:
    assert OUTPUTS.RECORD.is_file(), "docs/outputs.json is missing: run scripts/docs/outputs.py"
    return cast(dict[str, Any], json.loads(OUTPUTS.RECORD.read_text(encoding="utf-8")))


def test_every_marked_output_is_the_generated_one() -> None:
    """A marked block or number edited by hand no longer matches the hash the script recorded."""
    recorded = _record()["outputs"]
    assert set(recorded) == set(OUTPUTS.GENERATORS), "rerun scripts/docs/outputs.py: its outputs changed"
    seen, wrong = set(), []
    for path in OUTPUTS.doc_files():
        for name, body in OUTPUTS.marked(path.read_text(encoding="utf-8")):
            seen.add(name)
            if OUTPUTS.digest(body) != recorded.get(name):
                wrong.append(f"{path.relative_to(ROOT)}: {name}")
    assert not wrong, f"edited by hand or not regenerated (run scripts/docs/outputs.py): {wrong}"
    assert seen == set(recorded), f"outputs with no marker in the docs: {sorted(set(recorded) - seen)}"


def test_outputs_were_generated_with_the_current_demo_and_kb() -> None:
    from kb.sources.embedded import EMBEDDED_VERSION
    from mluke.demo.model import DEMO_VERSION

    record = _record()
    stale = "the docs' outputs are from another {}: rerun scripts/docs/outputs.py"
    assert record["demo_version"] == DEMO_VERSION, stale.format("demo model")
    assert record["embedded_version"] == EMBEDDED_VERSION, stale.format("embedded kb")


def test_generated_numbers_are_quoted_only_inside_markers() -> None:
    outside = []
    for path in OUTPUTS.doc_files():
        text = OUTPUTS.MARKER.sub("", path.read_text(encoding="utf-8"))
        for glob, pattern in GENERATED_ELSEWHERE:
            if path.match(glob):
                outside += [f"{path.relative_to(ROOT)}: {m[0]!r}" for m in re.finditer(pattern, text, re.M)]
    assert not outside, f"generated outputs quoted by hand (put them inside <!-- output: NAME --> markers): {outside}"


def test_the_markers_pair_up() -> None:
    for path in OUTPUTS.doc_files():
        text = path.read_text(encoding="utf-8")
        opened, closed = text.count("<!-- output: "), text.count("<!-- /output -->")
        assert opened == closed == len(OUTPUTS.marked(text)), f"{path.relative_to(ROOT)}: unpaired output markers"


# -- documentation named by --help --------------------------------------------------------------------


def _help_texts() -> list[str]:
    import click
    import typer

    from mluke.cli import app

    texts: list[str] = []

    def walk(command: click.Command) -> None:
        texts.append(command.help or "")
        texts.extend(getattr(p, "help", None) or "" for p in command.params)
        if isinstance(command, click.Group) or hasattr(command, "list_commands"):
            for name in command.list_commands(click.Context(command)):  # type: ignore[attr-defined]
                walk(command.get_command(click.Context(command), name))  # type: ignore[attr-defined]

    walk(typer.main.get_command(app))
    return texts


def test_every_page_and_anchor_named_by_a_help_text_exists() -> None:
    refs = [m.groups() for text in _help_texts() for m in re.finditer(r"([\w./-]+\.md)(?:#([\w-]+))?", text)]
    assert refs, "the help texts name the documentation pages that explain them"
    assert not [t for t in _help_texts() if "README" in t], "--help names pages and sections, not 'the README'"
    missing = []
    for page, anchor in refs:
        file = ROOT / page
        if not file.is_file():
            missing.append(page)
        elif anchor and anchor not in _anchors(file):
            missing.append(f"{page}#{anchor}")
    assert not missing, f"--help names documentation that does not exist: {missing}"
