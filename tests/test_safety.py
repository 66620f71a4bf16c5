"""Safety rules of the source tree: no unpickling, no shell, ``torch.load`` only with ``weights_only=True``,
SQLite URIs only from escaped paths, and data files may not name paths outside their folder.

The scan reads the syntax tree of every ``.py`` file under kb/, mluke/, probes/, benchmarks/ and
scripts/, so ``model.eval()`` or a docstring that mentions ``shell=True`` is not a finding.
"""

import ast
import json
from pathlib import Path

import pytest

import kb
from kb.files import is_plain_name

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("kb", "mluke", "probes", "benchmarks", "scripts")

#: Justified exceptions: "path:line-free description" -> why it is safe. Each entry needs a comment.
ALLOWED: dict[str, str] = {
    # e.g. "benchmarks/x.py: torch.load without weights_only=True": "loads a file it wrote itself a line above",
    # the docs' outputs are made by running the project's own snippets, written in the script itself
    "scripts/docs/outputs.py: exec()": "runs the Python examples the docs show, which are string constants of "
    "the script (never read from a file or a user)",
    # a worker checks that an exception it caught survives the trip to the parent before sending it
    "mluke/linking/workers.py: pickle.loads": "unpickles the bytes it pickled itself on the line before (an exception "
    "the worker raised), never data from a file, a user or another process",
}

UNPICKLERS = {
    "pickle": {"load", "loads", "Unpickler"},
    "cPickle": {"load", "loads", "Unpickler"},
    "dill": {"load", "loads"},
    "cloudpickle": {"load", "loads"},
    "joblib": {"load"},
    "marshal": {"load", "loads"},
    "shelve": {"open"},
    "yaml": {"load", "unsafe_load", "full_load", "load_all"},
}


def findings(source: str, path: str) -> list[str]:
    """Unsafe calls in ``source``, as ``"path: what"`` (the line number is in the message, not the key)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in UNPICKLERS | {"torch": {"load"}}:
            risky = (UNPICKLERS.get(node.module) or {"load"}) & {a.name for a in node.names}
            out += [f"{path}: from {node.module} import {name} (line {node.lineno})" for name in sorted(risky)]
        if not isinstance(node, ast.Call):
            continue
        func, keywords = node.func, {k.arg: k.value for k in node.keywords}
        where = f"(line {node.lineno})"
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module, name = func.value.id, func.attr
            if module == "torch" and name == "load":
                flag = keywords.get("weights_only")
                if not (isinstance(flag, ast.Constant) and flag.value is True):
                    out.append(f"{path}: torch.load without weights_only=True {where}")
            elif name in UNPICKLERS.get(module, ()) and not (
                module == "yaml" and name == "load" and _safe_loader(keywords.get("Loader"))
            ):
                out.append(f"{path}: {module}.{name} {where}")
        if isinstance(func, ast.Name) and func.id in ("eval", "exec"):
            out.append(f"{path}: {func.id}() {where}")
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "connect"
            and node.args
            and isinstance(node.args[0], ast.JoinedStr)
            and node.args[0].values
            and isinstance(node.args[0].values[0], ast.Constant)
            and str(node.args[0].values[0].value).startswith("file:")
        ):
            out.append(f"{path}: SQLite URI from an unescaped path (use Path.as_uri()) {where}")
        for key in ("allow_pickle", "shell"):
            value = keywords.get(key)
            if value is not None and not (isinstance(value, ast.Constant) and value.value is False):
                out.append(f"{path}: {key}={ast.unparse(value)} {where}")
    return out


def _safe_loader(node: ast.expr | None) -> bool:
    return node is not None and ast.unparse(node).rsplit(".", 1)[-1] in ("SafeLoader", "CSafeLoader")


def _key(finding: str) -> str:
    return finding.rsplit(" (line", 1)[0]


def test_the_scanner_finds_each_pattern():
    bad = """
import pickle, torch, yaml, subprocess, numpy as np
from pickle import loads
pickle.load(f); pickle.loads(b); torch.load(p); torch.load(p, weights_only=False)
np.load(p, allow_pickle=True); subprocess.run(cmd, shell=True); yaml.load(t); eval(s); exec(s)
sqlite3.connect(f"file:{path}?mode=ro", uri=True)
"""
    found = [_key(f) for f in findings(bad, "x.py")]
    assert found.count("x.py: torch.load without weights_only=True") == 2 and len(found) == 11, found
    good = """
torch.load(p, weights_only=True, map_location="cpu"); model.eval(); subprocess.run([a, b])
np.load(p, allow_pickle=False); yaml.load(t, Loader=yaml.SafeLoader); yaml.safe_load(t); json.loads(s)
sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
"Do not pass shell=True or call pickle.load()"
"""
    assert findings(good, "y.py") == []


def test_no_unsafe_loading_or_shell_in_the_source_tree():
    found = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "work" in path.relative_to(ROOT).parts:  # benchmarks/work: generated data, not source
                continue
            found += findings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    new = [f for f in found if _key(f) not in ALLOWED]
    assert not new, "unsafe calls (fix them, or allow-list them in tests/test_safety.py with a reason):\n" + "\n".join(
        new
    )
    stale = set(ALLOWED) - {_key(f) for f in found}
    assert not stale, f"allow-list entries that no longer match anything: {sorted(stale)}"


@pytest.mark.parametrize(
    "name, ok",
    [
        ("part-00000.jsonl.gz", True),
        ("ja", True),
        ("P17.jsonl", True),
        ("...jsonl", True),
        ("../x", False),
        ("..", False),
        (".", False),
        ("", False),
        ("/etc/passwd", False),
        ("a/b", False),
        ("a\\b", False),
        ("a\x00b", False),
        (None, False),
        (3, False),
    ],
)
def test_plain_names(name, ok):
    assert is_plain_name(name) is ok


def test_wiki_corpus_manifest_cannot_name_files_outside(tmp_path):
    from kb.sources.corpus import WikiCorpus, write_manifest

    folder = tmp_path / "kb.corpus"
    (folder / "ja").mkdir(parents=True)
    for parts in (["../../secret.gz"], ["/etc/passwd"]):
        write_manifest(folder, {"languages": {"ja": {"parts": parts}}})
        with pytest.raises(kb.InputFormatError, match=r"manifest\.json: '.*' of language 'ja' is not a file name"):
            WikiCorpus(folder).parts("ja")
    write_manifest(folder, {"languages": {"..": {"parts": ["p.gz"]}}})
    with pytest.raises(kb.InputFormatError, match=r"'\.\.' of language '\.\.' is not a file name"):
        WikiCorpus(folder).parts("..")
    write_manifest(folder, {"languages": {"ja": {"parts": ["part-0.jsonl.gz"]}}})
    assert WikiCorpus(folder).parts("ja") == [folder / "ja" / "part-0.jsonl.gz"]


def test_pretraining_corpus_meta_cannot_name_folders_outside(tmp_path):
    from mluke.pretraining.corpus_reader import FORMAT, FORMAT_VERSION, Corpus

    (tmp_path / "meta.json").write_text(
        json.dumps(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "languages": {"../elsewhere": {"sequences": 0, "words": 0, "entities": 0}},
            }
        )
    )
    with pytest.raises(kb.InputFormatError, match=r"meta\.json: language '\.\./elsewhere' is not a folder name"):
        Corpus(tmp_path)


def test_mlama_relation_cannot_name_files_outside(tmp_path):
    from probes.mlama import read_mlama

    lang = tmp_path / "mlama1.1" / "en"
    lang.mkdir(parents=True)
    (tmp_path / "outside.jsonl").write_text('{"sub_uri": "Q1", "obj_uri": "Q2", "sub_label": "a", "obj_label": "b"}\n')
    (lang / "templates.jsonl").write_text(
        json.dumps({"relation": "../../outside", "template": "[X] is in [Y] ."}) + "\n"
    )
    with pytest.raises(
        kb.InputFormatError, match=r"templates\.jsonl, (entry|line) 1: relation '\.\./\.\./outside' is not a file"
    ):
        read_mlama(tmp_path, "en")
