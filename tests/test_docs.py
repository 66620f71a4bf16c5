"""The documentation stays true to the code: every test named in "When things go wrong" (docs/troubleshooting.md,
``path.py::test_name``, then ``::other_test`` for the same file) exists; every output the docs show is the one
``scripts/docs/outputs.py`` generated with the current demo model and kb (no demo training here: the marked texts
are checked against the hashes the script recorded in docs/outputs.json); every page and section a ``--help`` text
names exists."""

import importlib.util
import json
import re
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
    from mluke.demo import DEMO_VERSION

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


def _slug(heading: str) -> str:
    """The anchor mkdocs (toc's default slugify) and GitHub give a heading."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


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
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
            if anchor not in {_slug(h) for h in headings}:
                missing.append(f"{page}#{anchor}")
    assert not missing, f"--help names documentation that does not exist: {missing}"
