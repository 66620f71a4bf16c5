"""Regenerate every output the documentation shows, by running what prints it.

The README and the pages under ``docs/`` show what commands and snippets print with the embedded
knowledge base and the demo model. Those outputs live between markers, on their own lines around a
block (with blank lines between, so Markdown reads the block as Markdown) or inline around a number
in prose::

    <!-- output: NAME -->
    ...generated text...
    <!-- /output -->

    The demo answers <!-- output: NAME -->227 of the 235<!-- /output --> capitals right.

This script runs each example (``GENERATORS`` below) against the current demo model and embedded
knowledge base, writes the outputs between their markers, and records in ``docs/outputs.json`` what
produced them (the demo and kb versions, the transformers major version, the date) and the SHA-256 of
each marked text. ``tests/test_docs.py`` fails when a marked text is edited by hand, when a generated
number is quoted outside its markers, or when the demo or the kb changes without a rerun.

Usage (trains the demo model on first use, several minutes on a CPU)::

    .venv/bin/python scripts/docs/outputs.py            # regenerate and write
    .venv/bin/python scripts/docs/outputs.py --check    # regenerate and report differences only

Set ``MLUKE_HOME`` to train and cache in another folder than ``~/.cache/mluke``; the outputs show the
default cache path either way.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "docs" / "outputs.json"
MARKER = re.compile(r"<!-- output: (?P<name>[\w-]+) -->(?P<body>.*?)<!-- /output -->", re.S)
SHOWN_CACHE = "~/.cache/mluke"


def doc_files() -> list[Path]:
    """The Markdown files that may hold marked outputs: the README and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def marked(text: str) -> list[tuple[str, str]]:
    """(name, text between the markers) for every marked output of a file, in order."""
    return [(m["name"], m["body"]) for m in MARKER.finditer(text)]


def digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


# -- running the examples ------------------------------------------------------------------------


def _shown(text: str) -> str:
    """Output as a reader sees it: the cache folder as the default path, no trailing spaces."""
    from kb.cache import cache_dir

    text = text.replace(str(cache_dir()), SHOWN_CACHE)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _command(line: str) -> str:
    """``$ mluke LINE`` and what it prints (stderr's notes first, then stdout), as a text block."""
    mluke = Path(sys.executable).with_name("mluke")
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run([str(mluke), *shlex.split(line)], capture_output=True, text=True, env=env, check=False)
    return f"\n\n```text\n$ mluke {line}\n{_shown(done.stderr + done.stdout)}\n```\n\n"


def _snippet(code: str) -> str:
    """A Python block: ``code`` and, as comments under it, what running it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "<docs snippet>", "exec"), {"__name__": "__docs__"})
    comments = "\n".join(f"# {line}" for line in _shown(printed.getvalue()).splitlines())
    return f"\n\n```python\n{code.strip()}\n{comments}\n```\n\n"


@functools.cache
def _capitals_ja() -> Any:
    import mluke

    return mluke.probe("[X] is the capital of [Y]", lang="ja")


@functools.cache
def _capitals_ja_command() -> str:
    return _command('probe "[X] is the capital of [Y]" --lang ja --limit 4')


def capitals_header() -> str:
    """Getting started: the line above the table, as the command prints it."""
    found = re.search(r"\[ja, P1376, .*? of \d+\]", _capitals_ja_command())
    if found is None:
        raise ValueError("the probe's output has no '[ja, P1376, ... of N]' header")
    return f"`{found[0]}`"


def capitals_right() -> str:
    """Getting started: how many Japanese capitals the demo gets right."""
    result = _capitals_ja()
    right = sum(1 for row in result.rows if row.gold and row.rank == 1)
    return f"{right} of the {result.metrics['with_gold']} right (P@1 {result.metrics['P@1']:.3f}"


def capitals_summary() -> str:
    """README: how many Japanese capitals the demo gets right."""
    import transformers

    result = _capitals_ja()
    metrics = result.metrics
    right = sum(1 for row in result.rows if row.gold and row.rank == 1)
    return (
        f"{right} of the {metrics['with_gold']} capitals right (P@1 {metrics['P@1']:.3f} "
        f"with transformers {transformers.__version__.split('.')[0]}.x"
    )


def capitals_no_subject_entity() -> str:
    """Probing guide: P@1 of the quick start's question with [Y] only."""
    import mluke

    result = mluke.probe("[X] is the capital of [Y]", lang="ja", options=mluke.ProbeOptions(use_subject_entity=False))
    return f"P@1 {result.metrics['P@1']:.3f}"


def demo_vocabulary() -> str:
    """Probing guide: what the demo's entity vocabulary holds, by kind."""
    from collections import Counter

    import kb
    import mluke
    from mluke.demo.model import demo_model

    _, _, vocab = mluke.load(demo_model(progress=False))
    db = kb.default_db()
    kinds = Counter(db.entity(entry.key).kind for entry in vocab if entry.key is not None)
    parts = ", ".join(f"{n} {_plural(kind)}" for kind, n in kinds.most_common())
    return f"{sum(kinds.values())} entities ({parts})"


def _plural(kind: str) -> str:
    return {"country": "countries", "city": "cities", "currency": "currencies"}.get(kind, kind + "s")


def demo_steps(message: str) -> Callable[[], str]:
    """Troubleshooting page: the demo training's own interruption and resumption messages."""

    def make() -> str:
        from mluke.demo.model import DEMO_VERSION, demo_model

        steps = json.loads((demo_model(progress=False) / "demo.json").read_text("utf-8"))["steps"]
        step = steps * 43 // 100  # an interruption a little before half way
        return "`" + message.format(step=step, steps=steps, version=DEMO_VERSION) + "`"

    return make


FIVE_LINES = """
import mluke

for m in mluke.link("東京は日本の首都です。", lang="ja"):   # embedded kb + demo model by default
    print(m.surface, m.key, m.name, round(m.confidence, 2), m.nil)
"""

MENTIONS = """
import kb

index = kb.MentionIndex.for_db(kb.default_db())    # built once (~3 s for 24 languages), then cached
for m in index.detect("Ich wohne in Valencia, nicht in London.", "de"):
    print(m.start, m.end, m.surface, [(c.key, round(c.prior, 2)) for c in m.candidates])
"""

MODELS = """
import mluke, torch
from mluke.demo import demo_model

model, tokenizer, entity_vocab = mluke.load(demo_model())   # or "studio-ousia/mluke-base", or a folder
enc = tokenizer("The capital of Japan is <mask>.", entity_spans=[(24, 30)])   # entity [MASK] over <mask>
words, entities = model.encode(**enc)                  # encoder only: (1, n_words, hidden), (1, 1, hidden)
candidates = torch.tensor(entity_vocab.get_ids([("en", "Tokyo"), ("en", "Seoul"), ("en", "Beijing")]))
scores = model.entity_scores(entities[:, 0], candidates)   # log p(candidate), normaliser over all entities
print(words.shape, entities.shape, [round(p, 3) for p in scores.exp()[0].tolist()])
"""

#: Every marked output: its name and how to make it.
GENERATORS: dict[str, Callable[[], str]] = {
    "capitals-ja-summary": capitals_summary,
    "capitals-ja": _capitals_ja_command,
    "capitals-ja-header": capitals_header,
    "capitals-ja-right": capitals_right,
    "founded-error": lambda: _command('probe "[X] was founded in [Y]" --lang ja'),
    "founded-subjects": lambda: _command(
        'probe "[X] was founded in [Y]" --lang ja --subject ソニー --subject トヨタ自動車 --subject 日本 --top-k 5'
    ),
    "capitals-ja-no-subject-entity": capitals_no_subject_entity,
    "demo-vocabulary": demo_vocabulary,
    "five-lines": lambda: _snippet(FIVE_LINES),
    "kb-lookup-tokyo": lambda: _command("kb lookup embedded 東京 --lang ja"),
    "mentions-detect": lambda: _snippet(MENTIONS),
    "models-snippet": lambda: _snippet(MODELS),
    "demo-interrupted": demo_steps(
        "Interrupted at step {step:,} of {steps:,}; the checkpoint is kept in ...demo-model-v{version}.work/run "
        "and the next run resumes from it"
    ),
    "demo-resuming": demo_steps("Resuming the demo model's training at step {step:,} of {steps:,}"),
}


# -- writing ------------------------------------------------------------------------------------


def provenance() -> dict[str, Any]:
    """What the outputs depend on: the demo model's and the embedded kb's versions, transformers' major."""
    import transformers

    from kb.sources.embedded import EMBEDDED_VERSION
    from mluke.demo.model import DEMO_VERSION

    return {
        "demo_version": DEMO_VERSION,
        "embedded_version": EMBEDDED_VERSION,
        "transformers_major": int(transformers.__version__.split(".")[0]),
        "date": datetime.date.today().isoformat(),
    }


def regenerate(check: bool) -> int:
    """Run every generator, then write the marked outputs and the record (or, with ``check``, list the
    differences); 1 when a marker names no generator or a generator's output has no marker."""
    files = {path: path.read_text(encoding="utf-8") for path in doc_files()}
    used = {name for text in files.values() for name, _ in marked(text)}
    unknown, unused = sorted(used - GENERATORS.keys()), sorted(GENERATORS.keys() - used)
    if unknown or unused:
        print(f"markers without a generator: {unknown}; generators without a marker: {unused}", file=sys.stderr)
        return 1
    outputs = {}
    for name, make in GENERATORS.items():
        print(f"running {name}", file=sys.stderr)
        outputs[name] = make()
    changed = []
    for path, text in files.items():
        new = MARKER.sub(lambda m: f"<!-- output: {m['name']} -->{outputs[m['name']]}<!-- /output -->", text)
        if new != text:
            changed.append(path.relative_to(ROOT).as_posix())
            if not check:
                path.write_text(new, encoding="utf-8")
    record = {**provenance(), "outputs": {name: digest(body) for name, body in sorted(outputs.items())}}
    if RECORD.is_file():  # the date says when the outputs last changed, not when the script last ran
        before = json.loads(RECORD.read_text(encoding="utf-8"))
        if {**before, "date": record["date"]} == record:
            record["date"] = before["date"]
    if not check:
        RECORD.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(("differ: " if check else "rewritten: ") + (", ".join(changed) or "none"), file=sys.stderr)
    return 1 if check and changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when an output differs")
    return regenerate(parser.parse_args().check)


if __name__ == "__main__":
    sys.exit(main())
