"""mLAMA 1.1: reading the released folder (the evaluation is :mod:`probes.mlama_eval`).

Layout (Kassner et al., 2021)::

    mlama1.1/<lang>/templates.jsonl           {"relation": "P19", "template": "[X] was born in [Y] ."}
    mlama1.1/<lang>/<relation>.jsonl          {"sub_label", "obj_label", "sub_uri", "obj_uri", "lineid", ...}
    TREx_multilingual_objects/<lang>.json     {"P19": {"objects": ["Paris", ...]}, ...}
    GoogleRE_objects/<lang>.json              {"place_of_birth": {"objects": [...]}, ...}

Subjects and gold objects are entities identified by their QIDs (``sub_uri``,
``obj_uri``), not by label strings; a subject with several objects (N-M
relations) keeps them all. The Google-RE relations (``place_of_birth.jsonl``,
``place_of_death.jsonl``) have labels only: a label is given the QID it has in the
language's other relation files when that QID is the only one it has there;
the others stay labels (a subject keyed ``label:<sub_label>``, an object scored
with word masks), and :attr:`MlamaRelation.note` says how many were matched.
Candidates come from the object files; a candidate label is mapped to the QID it
has in that language's facts (labels with no QID are kept as word-only candidates).
Relations about dates are skipped, as in the reference evaluation. The data is
CC BY-NC: it is never shipped with mluke.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.db import Template, parse_template
from kb.errors import InputFormatError
from kb.files import is_plain_name

#: Skipped like in the reference evaluation: objects are dates, not entities.
DATE_RELATIONS = frozenset({"date_of_birth", "date_of_death", "P569", "P570", "P571", "P577", "P580", "P582", "P585"})


@dataclass
class MlamaRelation:
    """One relation in one language: its template, subjects with gold objects, candidates."""

    lang: str
    relation: str
    template: Template
    subjects: dict[str, str]  # sub_uri (or "label:" + sub_label, Google-RE) -> sub_label
    gold: dict[str, set[str]]  # subject key -> obj_uris (or obj_labels of objects without QID)
    candidates: list[tuple[str | None, str]]  # (obj_uri or None, label)
    object_labels: dict[str, str] = field(default_factory=dict)  # obj_uri -> label
    note: str = ""  # how a relation without URIs (Google-RE) was matched by label; "" otherwise


#: The key of a subject that has no QID (a Google-RE subject whose label matched none).
LABEL_KEY = "label:"


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line; bytes that are not UTF-8 or a line that is
    not JSON are an :class:`InputFormatError` naming the line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFormatError(f"{path}, line {line}: bytes that are not UTF-8 ({exc.reason})") from None
    rows = []
    for lineno, row in enumerate(io.StringIO(text, newline=None), 1):
        if not row.strip():
            continue
        try:
            rows.append((lineno, json.loads(row)))
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"{path}, line {lineno}: not valid JSON ({exc})") from None
    return rows


def _candidate_files(root: Path, lang: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for folder in ("TREx_multilingual_objects", "GoogleRE_objects"):
        path = root / folder / f"{lang}.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"{path}: bytes that are not UTF-8 at byte {exc.start}") from None
            except json.JSONDecodeError as exc:
                raise InputFormatError(f"{path}: not valid JSON ({exc})") from None
            if not isinstance(data, dict):
                raise InputFormatError(
                    f"{path}: a JSON {type(data).__name__}; expected an object of relations, "
                    '{"P19": {"objects": [...]}, ...}'
                )
            for rel, value in data.items():
                objects = value.get("objects") if isinstance(value, dict) else None
                if not isinstance(objects, list):
                    raise InputFormatError(f'{path}: relation {rel!r} should map to {{"objects": [...]}}')
                out[rel] = [str(o) for o in objects]
    return out


def _check_fact(fact: Any, path: Path, line: int, uris: bool = True) -> None:
    """A fact is an object whose subject and object URIs (``uris``; not in Google-RE files) and labels are
    strings (an :class:`InputFormatError` if not)."""
    expected = (
        "expected sub_label, obj_label, sub_uri, obj_uri"
        if uris
        else "expected sub_label, obj_label (a file without sub_uri / obj_uri, the Google-RE layout)"
    )
    if not isinstance(fact, dict):
        raise InputFormatError(f"{path}, line {line}: a JSON {type(fact).__name__}, not an object; {expected}")
    for key in ("sub_uri", "obj_uri", "sub_label", "obj_label") if uris else ("sub_label", "obj_label"):
        if key not in fact:
            raise InputFormatError(f"{path}, line {line}: missing {key!r}; {expected}")
        if not isinstance(fact[key], str):
            raise InputFormatError(
                f"{path}, line {line}: {key!r} is a JSON {type(fact[key]).__name__}, expected a string"
            )


def find_root(path: str | Path) -> tuple[Path, Path]:
    """(the folder holding the candidate files, the folder holding one folder per language)."""
    path = Path(path)
    if not path.is_dir():
        raise InputFormatError(f"{path}: no such folder (expected the mLAMA data folder)")
    for data in (path / "mlama1.1", path):
        if data.is_dir() and any((d / "templates.jsonl").is_file() for d in data.iterdir() if d.is_dir()):
            return (path if data != path else path.parent), data
    raise InputFormatError(
        f"{path}: no <lang>/templates.jsonl inside; expected the mLAMA 1.1 layout (mlama1.1/<lang>/...)"
    )


def _has_uris(rows: list[tuple[int, Any]]) -> bool:
    """Whether a facts file carries QIDs (T-REx layout); Google-RE files have none in any record."""
    return any(isinstance(f, dict) and ("sub_uri" in f or "obj_uri" in f) for _, f in rows)


def _label_qids(folder: Path, relations: list[str], read: dict[str, list[tuple[int, Any]]]) -> dict[str, str]:
    """Label -> QID over the subjects and objects of the language's facts files that carry QIDs, for the
    labels that have a single QID there. A file that cannot be read contributes nothing (it is reported
    when it is evaluated)."""
    qids: dict[str, set[str]] = defaultdict(set)
    for rel in relations:
        if rel not in read:
            try:
                read[rel] = _read_jsonl(folder / f"{rel}.jsonl") if (folder / f"{rel}.jsonl").is_file() else []
            except InputFormatError:
                read[rel] = []
        for _, fact in read[rel]:
            if not isinstance(fact, dict):
                continue
            for uri, label in (("sub_uri", "sub_label"), ("obj_uri", "obj_label")):
                if isinstance(fact.get(uri), str) and isinstance(fact.get(label), str):
                    qids[fact[label]].add(fact[uri])
    return {label: next(iter(found)) for label, found in qids.items() if len(found) == 1}


def read_mlama(path: str | Path, lang: str, relations: list[str] | None = None) -> list[MlamaRelation]:
    """Every (non-date) relation of ``lang`` with its template, facts and candidates.

    A record that cannot be read (bytes that are not UTF-8, a line that is not JSON, a template
    without its strings, a fact without its four string fields, or without its two labels in a
    Google-RE file) is an :class:`InputFormatError` naming its file and line. Google-RE files (no
    ``sub_uri`` / ``obj_uri``) are matched by label (see the module docs) and never stop the other
    relations of the language."""
    root, data = find_root(path)
    folder = data / lang
    if not (folder / "templates.jsonl").is_file():
        have = sorted(d.name for d in data.iterdir() if (d / "templates.jsonl").is_file())
        raise InputFormatError(f"{folder}: no templates.jsonl; languages here: {', '.join(have)}")
    candidates = _candidate_files(root, lang)
    templates: list[tuple[str, Template]] = []
    all_relations: list[str] = []
    for i, row in _read_jsonl(folder / "templates.jsonl"):
        rel = row.get("relation") if isinstance(row, dict) else None
        if not rel or not isinstance(rel, str) or not isinstance(row.get("template"), str):
            raise InputFormatError(
                f"{folder / 'templates.jsonl'}, line {i}: expected an object with the strings 'relation' and 'template'"
            )
        if not is_plain_name(f"{rel}.jsonl"):  # it names the facts file, <rel>.jsonl
            raise InputFormatError(
                f"{folder / 'templates.jsonl'}, line {i}: relation {rel!r} is not a file name "
                "inside the language folder"
            )
        all_relations.append(rel)
        if rel in DATE_RELATIONS or (relations and rel not in relations):
            continue
        if not (folder / f"{rel}.jsonl").is_file():
            continue
        templates.append((rel, parse_template(row["template"], where=f"{folder / 'templates.jsonl'} ({rel})")))
    read: dict[str, list[tuple[int, Any]]] = {rel: _read_jsonl(folder / f"{rel}.jsonl") for rel, _ in templates}
    label_qids: dict[str, str] | None = None
    out = []
    for rel, template in templates:
        facts_path = folder / f"{rel}.jsonl"
        uris = _has_uris(read[rel]) or not read[rel]  # an empty file has nothing to match
        if not uris and label_qids is None:
            label_qids = _label_qids(folder, all_relations, read)  # files without QIDs add nothing
        subjects: dict[str, str] = {}
        gold: dict[str, set[str]] = defaultdict(set)
        object_labels: dict[str, str] = {}
        label_only: set[str] = set()  # gold objects kept as labels (Google-RE, no QID found)
        for j, fact in read[rel]:
            _check_fact(fact, facts_path, j, uris)
            if uris:
                s, o, qid = fact["sub_uri"], fact["obj_uri"], None
            else:
                s = (label_qids or {}).get(fact["sub_label"], LABEL_KEY + fact["sub_label"])
                qid = (label_qids or {}).get(fact["obj_label"])
                o = qid if qid is not None else fact["obj_label"]
                if qid is None:
                    label_only.add(o)
            subjects.setdefault(s, fact["sub_label"])
            if uris or qid is not None:
                object_labels.setdefault(o, fact["obj_label"])
            gold[s].add(o)
        by_label = {**({} if uris else (label_qids or {})), **{label: uri for uri, label in object_labels.items()}}
        labels = candidates.get(rel) or sorted(set(object_labels.values()) | label_only)
        cands = [(by_label.get(label), label) for label in dict.fromkeys(labels)]
        known = {k if k is not None else label for k, label in cands}
        cands += [(uri, label) for uri, label in sorted(object_labels.items()) if uri not in known]
        cands += [(None, label) for label in sorted(label_only) if label not in known]
        note = ""
        if not uris:
            matched_s = sum(not k.startswith(LABEL_KEY) for k in subjects)
            note = (
                f"{lang}/{rel}: no sub_uri/obj_uri (Google-RE layout); matched by label to the QIDs of the "
                f"language's other relations: {matched_s} of {len(subjects)} subjects, {len(object_labels)} of "
                f"{len(object_labels) + len(label_only)} objects (the rest kept as labels, scored with word masks)"
            )
        out.append(MlamaRelation(lang, rel, template, subjects, dict(gold), cands, object_labels, note))
    return out
