"""Reading and writing relation classification data in the TACRED layout (Zhang et al., 2017; LUKE Table 2,
KnowBert Table 4).

A JSON list of records, one per sentence and subject/object pair::

    {"id": "e7798", "token": ["Bill", "Gates", "founded", "Microsoft", "."],
     "subj_start": 0, "subj_end": 1, "obj_start": 3, "obj_end": 3,
     "subj_type": "PERSON", "obj_type": "ORGANIZATION", "relation": "org:founded_by"}

``subj_end`` and ``obj_end`` are inclusive token indices. The words are joined by single spaces into the
example's text and the subject becomes its ``head``, the object its ``tail`` (character spans); the relation is
the label as it is (``no_relation`` or a type such as ``per:title``, with no direction: the subject is always
the head). ``id`` is kept when present (else the record's position, from 0); ``subj_type``/``obj_type`` are kept
when present. JSON lines are read too.

Bad records (not JSON, not an object, a missing or mistyped field, tokens that are not strings, an index outside
the sentence or an end before its start, an entity of blank tokens, overlapping subject and object, a relation
that is not one word) are counted and skipped, never fatal, each named ``file:line``. A missing file, a JSON list
that is not UTF-8, or a file without any record is a :class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError, OptionError
from probes.transfer.readers.json_records import BadRecord, read_json_records
from probes.transfer.readers.relations import ReDataset, ReExample

_INDICES = ("subj_start", "subj_end", "obj_start", "obj_end")


def _span(tokens: list[str], starts: list[int], first: int, last: int, name: str) -> tuple[int, int]:
    """The character span of tokens ``first..last`` (inclusive); raises :class:`BadRecord`."""
    if not 0 <= first <= last < len(tokens):
        raise BadRecord("bad entity indices", f"{name} [{first}, {last}] in {len(tokens)} tokens")
    if not " ".join(tokens[first : last + 1]).strip():
        raise BadRecord("blank entity", name)
    return starts[first], starts[last] + len(tokens[last])


def _example(record: Any, index: int, lang: str | None) -> ReExample:
    """The example of one record; raises :class:`BadRecord`."""
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object", type(record).__name__)
    missing = [k for k in ("token", *_INDICES, "relation") if k not in record]
    if missing:
        raise BadRecord("missing field", ", ".join(missing))
    tokens, relation = record["token"], record["relation"]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise BadRecord("token is not a list of strings", repr(tokens)[:60])
    indices = [record[k] for k in _INDICES]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
        raise BadRecord("indices are not integers", repr(indices))
    if not isinstance(relation, str) or not relation or relation != relation.strip() or " " in relation:
        raise BadRecord("relation is not one word", repr(relation)[:60])
    types = [record.get(k) for k in ("subj_type", "obj_type")]
    if not all(t is None or isinstance(t, str) for t in types):
        raise BadRecord("subj_type/obj_type are not strings", repr(types)[:60])
    starts, offset = [], 0
    for token in tokens:
        starts.append(offset)
        offset += len(token) + 1
    head = _span(tokens, starts, indices[0], indices[1], "subject")
    tail = _span(tokens, starts, indices[2], indices[3], "object")
    if head[0] < tail[1] and tail[0] < head[1]:
        raise BadRecord("subject and object overlap", f"tokens {indices}")
    ident = record.get("id", index)
    return ReExample(str(ident), " ".join(tokens), head, tail, relation, lang, types[0], types[1])


def read_tacred(path: str | os.PathLike[str], *, lang: str | None = None) -> ReDataset:
    """Examples of a TACRED file (see the module docs).

    Args:
        path: the file (a JSON list or JSON lines, UTF-8).
        lang: stored on each example.

    Returns:
        The :class:`~probes.transfer.readers.relations.ReDataset` (``layout="tacred"``).

    Raises:
        InputFormatError: a missing file, a JSON list that is not UTF-8, or a file without any record.
    """
    path = Path(path)
    examples, skips = read_json_records(path, "a TACRED file", lambda record, index: _example(record, index, lang))
    if not examples:
        raise InputFormatError(skips.nothing_read(path, "TACRED record"))
    labels = tuple(sorted({e.label for e in examples}))
    return ReDataset(examples, labels, dict(skips.counts), skips.examples, str(path), layout="tacred")


def _record(example: ReExample) -> dict[str, Any]:
    """The TACRED record of an example whose entities start and end at words; raises OptionError."""
    tokens = example.text.split(" ")
    starts, ends, offset = {}, {}, 0
    for i, token in enumerate(tokens):
        starts[offset], ends[offset + len(token)] = i, i
        offset += len(token) + 1
    record: dict[str, Any] = {"id": example.id, "token": tokens}
    for name, (start, end) in (("subj", example.head), ("obj", example.tail)):
        if start not in starts or end not in ends or not example.text[start:end].strip():
            raise OptionError(
                f"cannot write example {example.id!r} in the TACRED layout: its {name}ect span {(start, end)} "
                "does not start and end at words (the text's pieces between single spaces)"
            )
        record[f"{name}_start"], record[f"{name}_end"] = starts[start], ends[end]
    if example.head[0] < example.tail[1] and example.tail[0] < example.head[1]:
        raise OptionError(f"cannot write example {example.id!r} in the TACRED layout: subject and object overlap")
    if not example.label or " " in example.label or example.label != example.label.strip():
        raise OptionError(f"cannot write example {example.id!r}: relation {example.label!r} is not one word")
    types = {"subj_type": example.head_type, "obj_type": example.tail_type}
    record |= {name: value for name, value in types.items() if value is not None}
    record["relation"] = example.label
    return record


def write_tacred(examples: Iterable[ReExample], path: str | os.PathLike[str]) -> Path:
    """Write examples as a TACRED JSON list (UTF-8, one record a line), the inverse of :func:`read_tacred`.

    Args:
        examples: examples whose head (subject) and tail (object) start and end at words of the text split on
            single spaces; ``head_type``/``tail_type`` are written when set.
        path: the file to write (its folder is made).

    Returns:
        ``path``, which :func:`read_tacred` reads back to the same examples.

    Raises:
        OptionError: an entity that does not start and end at words, overlapping entities, a relation that is
            not one word.
    """
    path = Path(path)
    records = [_record(e) for e in examples]
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(json.dumps(r, ensure_ascii=False) for r in records)
    path.write_text(f"[\n{lines}\n]\n", encoding="utf-8", newline="\n")
    return path
