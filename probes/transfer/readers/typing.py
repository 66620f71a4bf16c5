"""Reading and writing entity typing data in the Open Entity layout (Choi et al., 2018, as LUKE and ERNIE use it).

One record per mention, either a JSON list of records (LUKE's ``train.json``/``dev.json``/``test.json``) or
JSON lines::

    {"sent": "Paris is the capital of France .", "start": 0, "end": 5, "labels": ["location", "place", "city"]}

``start`` and ``end`` are character offsets into ``sent`` (``sent[start:end]`` is the mention); an ``id`` field
is kept when present (else the record's position, from 0). By default only the nine general types of the
LUKE and KnowBert papers are kept (:data:`GENERAL_TYPES`; other labels dropped and counted, an example left
with none is kept with an empty label set); ``all_labels=True`` keeps every label.

Bad records (not JSON, a JSON line that is not UTF-8, not an object, a missing or mistyped field, a span outside
the sentence or empty, labels that are not a list of strings) are counted and skipped, never fatal, each named
``file:line``; in a JSON list, reading goes on at the next whole record after a broken one. A missing file, a
JSON list that is not UTF-8, or a file without any record is a :class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError, OptionError
from kb.files import file_bytes
from probes.reading import ReadSet, Skips

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


class _BadRecord(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def _records(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    """(line, record) of a JSON list or JSON lines; a record that is not JSON (or a JSON line that is not UTF-8)
    gives ``(line, _BadRecord)``."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    if not data.lstrip().startswith(b"["):
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if raw.strip():
                try:
                    yield number, json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    yield number, _BadRecord("not UTF-8")
                except ValueError as exc:
                    yield number, _BadRecord("not JSON", str(exc)[:60])
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFormatError(f"{path}:{line}: bytes that are not UTF-8; expected a JSON list in UTF-8") from None
    decoder, pos = json.JSONDecoder(), text.index("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":  # (a list without its closing bracket ends with the text)
            return
        line = text.count("\n", 0, pos) + 1
        try:
            record, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            yield line, _BadRecord("not JSON", str(exc)[:60])
            pos = _next_object(text, pos + 1)
            continue
        yield line, record


def _next_object(text: str, pos: int) -> int:
    """Where reading a JSON list goes on after a broken record: the next ``{`` that starts a whole object followed
    by ``,`` or ``]``, else the end of the text."""
    decoder = json.JSONDecoder()
    while (pos := text.find("{", pos)) >= 0:
        try:
            _, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos += 1
            continue
        if text[end:].lstrip()[:1] in (",", "]"):
            return pos
        pos += 1
    return len(text)


def _example(record: Any, index: int, lang: str | None) -> TypingExample:
    """The example of one record, all its labels kept; raises :class:`_BadRecord`."""
    if isinstance(record, _BadRecord):
        raise record
    if not isinstance(record, dict):
        raise _BadRecord("not a JSON object", type(record).__name__)
    missing = [k for k in ("sent", "start", "end", "labels") if k not in record]
    if missing:
        raise _BadRecord("missing field", ", ".join(missing))
    sent, start, end, labels = record["sent"], record["start"], record["end"], record["labels"]
    if not isinstance(sent, str):
        raise _BadRecord("sent is not a string")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
        raise _BadRecord("start/end are not integers", f"{start!r}, {end!r}")
    if not 0 <= start < end <= len(sent) or not sent[start:end].strip():
        raise _BadRecord("bad mention span", f"[{start}, {end}) in a sentence of {len(sent)} characters")
    if not isinstance(labels, list) or not all(isinstance(l, str) and l for l in labels):
        raise _BadRecord("labels are not a list of strings", repr(labels)[:60])
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
    data = file_bytes(path, expected="an Open Entity file")
    skips = Skips()
    examples: list[TypingExample] = []
    dropped: Counter[str] = Counter()
    for index, (line, record) in enumerate(_records(path, data)):
        try:
            example = _example(record, index, lang)
        except _BadRecord as bad:
            skips.add(path, line, bad.reason, bad.detail)
            continue
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
