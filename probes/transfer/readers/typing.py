"""Reading and writing entity typing data in the Open Entity layout (Choi et al., 2018, as LUKE and ERNIE use it).

One record per mention, either a JSON list of records (LUKE's ``train.json``/``dev.json``/``test.json``) or
JSON lines::

    {"sent": "Paris is the capital of France .", "start": 0, "end": 5, "labels": ["location", "place", "city"]}

``start`` and ``end`` are character offsets into ``sent`` (``sent[start:end]`` is the mention); an ``id`` field
is kept when present (else the record's position, from 0). Records of the original release (uwnlp/open_type)
are read too, as LUKE's current reader reads them::

    {"annot_id": "...", "mention_span": "Paris", "left_context_token": [], "right_context_token": ["is", ...],
     "y_str": ["location", "place", "city"]}

the sentence being the context tokens and the mention joined by single spaces. By default only the nine
general types of the LUKE and KnowBert papers are kept (:data:`GENERAL_TYPES`; other labels dropped and
counted, an example left with none is kept with an empty label set); ``all_labels=True`` keeps every label.

Bad records (not JSON, a JSON line that is not UTF-8, not an object, a missing or mistyped field, a span outside
the sentence or empty, labels that are not a list of strings) are counted and skipped, never fatal, each named
``file:line``; in a JSON list, reading goes on at the next whole record after a broken one. A missing file, a
JSON list that is not UTF-8, or a file without any record is a :class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError, OptionError
from probes.reading import ReadSet
from probes.transfer.readers.json_records import BadRecord, read_json_records

#: The nine general types of Open Entity (Choi et al., 2018), the setting of LUKE Table 1 and KnowBert Table 7.
GENERAL_TYPES = ("entity", "location", "time", "organization", "object", "event", "place", "person", "group")


@dataclass(frozen=True)
class TypingExample:
    """One mention: the sentence, the mention's character span in it and its gold types (sorted)."""

    id: str
    text: str
    span: tuple[int, int]
    labels: tuple[str, ...]
    lang: str | None = None

    @property
    def mention(self) -> str:
        return self.text[self.span[0] : self.span[1]]


@dataclass
class TypingDataset(ReadSet[TypingExample]):
    """Examples read from one file, the labels kept (sorted), the labels dropped (count per label) and the
    records skipped (``path:line: reason``)."""

    examples: list[TypingExample]
    labels: tuple[str, ...]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None
    dropped_labels: dict[str, int] = field(default_factory=dict)

    def records(self) -> list[TypingExample]:
        return self.examples

    def __repr__(self) -> str:
        head = (
            f"TypingDataset({len(self.examples):,} examples, {len(self.labels)} labels, "
            f"{sum(self.dropped_labels.values()):,} labels dropped, skipped {sum(self.skipped.values()):,} records)"
        )
        return self._described(head, self.examples_skipped)


#: The fields of Open Entity's original release (uwnlp/open_type's crowd data): tokens around the mention.
RELEASE_FIELDS = ("mention_span", "left_context_token", "right_context_token", "y_str")


def _release_record(record: dict[str, Any]) -> dict[str, Any]:
    """A record of the original release in LUKE's layout: the sentence is the left context, the mention and the
    right context joined by single spaces (as LUKE's reader does), the labels are ``y_str``; raises
    :class:`BadRecord`."""
    missing = [k for k in RELEASE_FIELDS if k not in record]
    if missing:
        raise BadRecord("missing field", ", ".join(missing))
    left, mention, right = record["left_context_token"], record["mention_span"], record["right_context_token"]
    if not all(isinstance(t, list) and all(isinstance(x, str) for x in t) for t in (left, right)):
        raise BadRecord("left/right_context_token are not lists of strings")
    if not isinstance(mention, str):
        raise BadRecord("mention_span is not a string")
    before = " ".join(left)
    start = len(before) + (1 if before else 0)
    sent = " ".join([*left, mention, *right])
    ident = record.get("annot_id", record.get("id"))
    out = {"sent": sent, "start": start, "end": start + len(mention), "labels": record["y_str"]}
    return out if ident is None else {**out, "id": ident}


def _example(record: Any, index: int, lang: str | None) -> TypingExample:
    """The example of one record, all its labels kept; raises :class:`BadRecord`."""
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object", type(record).__name__)
    if "sent" not in record and "y_str" in record:
        record = _release_record(record)
    missing = [k for k in ("sent", "start", "end", "labels") if k not in record]
    if missing:
        raise BadRecord("missing field", ", ".join(missing))
    sent, start, end, labels = record["sent"], record["start"], record["end"], record["labels"]
    if not isinstance(sent, str):
        raise BadRecord("sent is not a string")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
        raise BadRecord("start/end are not integers", f"{start!r}, {end!r}")
    if not 0 <= start < end <= len(sent) or not sent[start:end].strip():
        raise BadRecord("bad mention span", f"[{start}, {end}) in a sentence of {len(sent)} characters")
    if not isinstance(labels, list) or not all(isinstance(l, str) and l for l in labels):
        raise BadRecord("labels are not a list of strings", repr(labels)[:60])
    ident = record.get("id", index)
    return TypingExample(str(ident), sent, (start, end), tuple(sorted(set(labels))), lang)


def read_typing(path: str | os.PathLike[str], *, lang: str | None = None, all_labels: bool = False) -> TypingDataset:
    """Examples of an Open Entity file (see the module docs).

    Args:
        path: the file (a JSON list or JSON lines, UTF-8).
        lang: stored on each example.
        all_labels: keep every label; by default only :data:`GENERAL_TYPES`.

    Returns:
        The :class:`TypingDataset`.

    Raises:
        InputFormatError: a missing file, a JSON list that is not UTF-8, or a file without any record.
    """
    path = Path(path)
    read, skips = read_json_records(path, "an Open Entity file", lambda record, index: _example(record, index, lang))
    examples: list[TypingExample] = []
    dropped: Counter[str] = Counter()
    for example in read:
        if not all_labels:
            dropped.update(l for l in example.labels if l not in GENERAL_TYPES)
            example = TypingExample(
                example.id, example.text, example.span, tuple(l for l in example.labels if l in GENERAL_TYPES), lang
            )
        examples.append(example)
    if not examples:
        raise InputFormatError(skips.nothing_read(path, "Open Entity record"))
    labels = tuple(sorted({l for e in examples for l in e.labels}))
    return TypingDataset(examples, labels, dict(skips.counts), skips.examples, str(path), dict(dropped))


def write_typing(examples: Iterable[TypingExample], path: str | os.PathLike[str]) -> Path:
    """Write examples as Open Entity JSON lines (UTF-8) that :func:`read_typing` (with ``all_labels=True``)
    reads back to the same examples.

    Args:
        examples: the examples.
        path: the file to write.

    Returns:
        The path written.

    Raises:
        OptionError: an example whose span is empty or outside its text.
    """
    path = Path(path)
    lines = []
    for e in examples:
        if not 0 <= e.span[0] < e.span[1] <= len(e.text) or not e.mention.strip():
            raise OptionError(f"cannot write example {e.id!r}: span {e.span} is empty or outside its text")
        record = {"id": e.id, "sent": e.text, "start": e.span[0], "end": e.span[1], "labels": list(e.labels)}
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8", newline="\n")
    return path
