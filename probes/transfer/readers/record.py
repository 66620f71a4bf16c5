"""Reading and writing ReCoRD (Zhang et al., 2018), the cloze-style reading comprehension of LUKE's Table 4.

Two layouts are read, both as distributed:

- the original ReCoRD JSON, ``{"version": "v1.0", "data": [passage, ...]}``;
- SuperGLUE's ReCoRD, JSON lines with one passage per line.

A passage record is ``{"id" (SuperGLUE: "idx"), "passage": {"text", "entities": [{"start", "end"}, ...]},
"qas": [{"id" (SuperGLUE: "idx"), "query", "answers": [{"start", "end", "text"}, ...]}, ...]}`` (``source`` and
other fields are ignored). ``start`` and ``end`` are character offsets into the passage and ``end`` is
*inclusive* (``text[start:end + 1]`` is the mention), as in the data set's own readers; here spans are stored with
an exclusive end. A query holds ``@placeholder`` where the answer entity goes. ``answers`` may be absent (test
files): such queries are read, and not scored.

One :class:`RecordExample` per query. Bad records (not JSON, not an object, a missing or mistyped field, an entity
or answer span outside the passage) are counted and skipped, never fatal, each named ``file:line`` (the line where
the passage record starts); a bad query (no ``@placeholder``, bad answers) skips that query only. In the original
layout reading goes on at the next whole passage after a broken one. A missing file, a file without any query,
or an original-layout file that is not UTF-8 is a :class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError, OptionError
from kb.files import file_bytes
from probes.reading import ReadSet, Skips
from probes.transfer.metrics.qa import normalize_answer
from probes.transfer.readers.json_records import BadRecord, decode_utf8, json_records, list_records

PLACEHOLDER = "@placeholder"
Span = tuple[int, int]
_DATA_LIST = re.compile(r'"data"\s*:\s*\[')


def candidate_key(text: str) -> str:
    """The key that groups a passage's entity mentions into candidates: SQuAD-style normalisation (lower case, no
    ASCII punctuation, no articles, single spaces), the normalisation of ReCoRD's scorer."""
    return normalize_answer(text, "en", "squad")


@dataclass(frozen=True)
class RecordExample:
    """One query: the passage, its entity mentions (character spans ``[start, end)``, sorted), the query with
    ``@placeholder``, the gold answer texts and spans (empty in test files)."""

    id: str
    passage_id: str
    text: str
    entities: tuple[Span, ...]
    query: str
    answers: tuple[str, ...] = ()
    answer_spans: tuple[Span, ...] = ()
    lang: str | None = None

    @property
    def placeholder(self) -> Span:
        """The character span of ``@placeholder`` in the query."""
        start = self.query.index(PLACEHOLDER)
        return start, start + len(PLACEHOLDER)

    def candidates(self) -> dict[str, list[Span]]:
        """The candidate answers: the passage's mentions grouped by :func:`candidate_key`, in passage order."""
        grouped: dict[str, list[Span]] = {}
        for s, e in self.entities:
            grouped.setdefault(candidate_key(self.text[s:e]), []).append((s, e))
        return grouped


@dataclass
class RecordDataset(ReadSet[RecordExample]):
    """The queries read from one file, how many passages they come from, and the records skipped
    (``path:line: reason``)."""

    examples: list[RecordExample]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None
    passages: int = 0

    def __repr__(self) -> str:
        read = f"{len(self.examples):,} queries in {self.passages:,} passages"
        return self._described(
            f"RecordDataset({read}, skipped {sum(self.skipped.values()):,} records)", self.examples_skipped
        )

    def records(self) -> list[RecordExample]:
        return self.examples


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _span(item: Any, text: str, what: str) -> Span:
    """The exclusive-end span of a ``{"start", "end"}`` object (``end`` inclusive); raises :class:`BadRecord`."""
    if not isinstance(item, dict) or not _is_int(item.get("start")) or not _is_int(item.get("end")):
        raise BadRecord(f"{what} is not an object with integer start and end", repr(item)[:60])
    start, end = item["start"], item["end"] + 1
    if not 0 <= start < end <= len(text):
        raise BadRecord(
            f"{what} span outside the passage", f"[{item['start']}, {item['end']}] in {len(text)} characters"
        )
    return start, end


def _ident(record: dict[str, Any], fallback: str) -> str:
    ident = record.get("id", record.get("idx", fallback))
    return str(ident)


def _passage(record: Any, index: int) -> tuple[str, str, tuple[Span, ...], list[Any]]:
    """The passage id, text, entity spans and raw queries of one record; raises :class:`BadRecord`."""
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object", type(record).__name__)
    missing = [k for k in ("passage", "qas") if k not in record]
    if missing:
        raise BadRecord("missing field", ", ".join(missing))
    passage, qas = record["passage"], record["qas"]
    if not isinstance(passage, dict) or not isinstance(passage.get("text"), str):
        raise BadRecord("passage is not an object with a text")
    if not isinstance(passage.get("entities"), list):
        raise BadRecord("passage entities are not a list")
    if not isinstance(qas, list):
        raise BadRecord("qas is not a list")
    text = passage["text"]
    entities = tuple(sorted({_span(e, text, "entity") for e in passage["entities"]}))
    return _ident(record, str(index)), text, entities, qas


def _query(qa: Any, passage: tuple[str, str, tuple[Span, ...]], number: int, lang: str | None) -> RecordExample:
    """The example of one query of a passage; raises :class:`BadRecord`."""
    pid, text, entities = passage
    if not isinstance(qa, dict) or not isinstance(qa.get("query"), str):
        raise BadRecord("query is not an object with a query string", f"passage {pid}")
    if qa["query"].count(PLACEHOLDER) != 1:
        raise BadRecord(f"query without exactly one {PLACEHOLDER}", f"passage {pid}: {qa['query'][:40]!r}")
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise BadRecord("answers are not a list", f"passage {pid}")
    spans, texts = [], []
    for a in answers:
        spans.append(_span(a, text, "answer"))
        if not isinstance(a.get("text"), str):
            raise BadRecord("answer text is not a string", f"passage {pid}")
        texts.append(a["text"])
    return RecordExample(
        _ident(qa, f"{pid}-{number}"), pid, text, entities, qa["query"], tuple(texts), tuple(spans), lang
    )


def _is_passage(record: Any) -> bool:
    return isinstance(record, dict) and "passage" in record and "qas" in record


def _records(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    """(line, passage record) of either layout (see the module docs)."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    head = data[:4096].decode("utf-8", errors="replace")
    found = _DATA_LIST.search(head)
    before = head[: found.start()] if found is not None else ""
    if not data.lstrip().startswith(b"{") or found is None or '"qas"' in before or '"passage"' in before:
        yield from json_records(path, data)  # SuperGLUE's JSON lines (or a bare JSON list of passages)
        return
    text = decode_utf8(path, data, "ReCoRD JSON")
    match = _DATA_LIST.search(text)
    assert match is not None  # found in the head
    yield from list_records(text, match.end(), is_record=_is_passage)


def read_record(path: str | os.PathLike[str], *, lang: str | None = None) -> RecordDataset:
    """The queries of a ReCoRD file (see the module docs).

    Args:
        path: the file, original ReCoRD JSON or SuperGLUE JSON lines (UTF-8).
        lang: stored on each example.

    Returns:
        The :class:`RecordDataset`.

    Raises:
        InputFormatError: a missing file, an original-layout file that is not UTF-8, or no query read.
    """
    path = Path(path)
    skips = Skips()
    examples: list[RecordExample] = []
    passages = 0
    for index, (line, record) in enumerate(_records(path, file_bytes(path, expected="a ReCoRD file"))):
        try:
            if isinstance(record, BadRecord):
                raise record
            pid, text, entities, qas = _passage(record, index)
        except BadRecord as bad:
            skips.add(path, line, bad.reason, bad.detail)
            continue
        passages += 1
        for number, qa in enumerate(qas):
            try:
                examples.append(_query(qa, (pid, text, entities), number, lang))
            except BadRecord as bad:
                skips.add(path, line, bad.reason, bad.detail)
    if not examples:
        raise InputFormatError(skips.nothing_read(path, "ReCoRD query"))
    return RecordDataset(examples, dict(skips.counts), skips.examples, str(path), passages)


def write_record(examples: Iterable[RecordExample], path: str | os.PathLike[str]) -> Path:
    """Write queries in the original ReCoRD layout (inclusive ends, queries of a passage together, passages in
    the order of their first query) that :func:`read_record` reads back to the same examples.

    Args:
        examples: the queries.
        path: the file to write.

    Returns:
        The path written.

    Raises:
        OptionError: a query without exactly one ``@placeholder``, or a span outside its passage.
    """
    path = Path(path)
    passages: dict[str, dict[str, Any]] = {}
    for e in examples:
        if e.query.count(PLACEHOLDER) != 1:
            raise OptionError(f"cannot write query {e.id!r}: it needs exactly one {PLACEHOLDER}")
        if any(not 0 <= s < t <= len(e.text) for s, t in (*e.entities, *e.answer_spans)):
            raise OptionError(f"cannot write query {e.id!r}: a span is empty or outside its passage")
        entry = passages.setdefault(
            e.passage_id,
            {
                "id": e.passage_id,
                "passage": {"text": e.text, "entities": [{"start": s, "end": t - 1} for s, t in e.entities]},
                "qas": [],
            },
        )
        answers = [{"start": s, "end": t - 1, "text": a} for (s, t), a in zip(e.answer_spans, e.answers)]
        entry["qas"].append({"id": e.id, "query": e.query, "answers": answers})
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"version": "v1.0", "data": list(passages.values())}, ensure_ascii=False, indent=1)
    path.write_text(text + "\n", encoding="utf-8", newline="\n")
    return path
