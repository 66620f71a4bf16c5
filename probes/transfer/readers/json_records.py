"""Records of a JSON list or JSON lines file, read one at a time so that a broken record is skipped and named at
its line instead of failing the whole file (the Open Entity and TACRED readers)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from kb.errors import InputFormatError
from kb.files import file_bytes
from probes.reading import Skips

T = TypeVar("T")


class BadRecord(Exception):
    """A record that cannot be read: ``reason`` and ``detail`` for the skip report (:class:`probes.reading.Skips`)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def json_records(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    """(line, record) of a JSON list or JSON lines; a record that is not JSON (or a JSON line that is not UTF-8)
    gives ``(line, BadRecord)``."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    if not data.lstrip().startswith(b"["):
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if raw.strip():
                try:
                    yield number, json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    yield number, BadRecord("not UTF-8")
                except ValueError as exc:
                    yield number, BadRecord("not JSON", str(exc)[:60])
        return
    text = decode_utf8(path, data, "a JSON list")
    yield from list_records(text, text.index("[") + 1)


def decode_utf8(path: Path, data: bytes, expected: str) -> str:
    """``data`` decoded as UTF-8; an :class:`InputFormatError` naming the line of the first byte that is not, and
    what the file was ``expected`` to be (``"a JSON list"``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFormatError(f"{path}:{line}: bytes that are not UTF-8; expected {expected} in UTF-8") from None


def list_records(text: str, pos: int, *, is_record: Callable[[Any], bool] | None = None) -> Iterator[tuple[int, Any]]:
    """(line, record) of the JSON list whose items start at ``pos`` of ``text`` (just after its ``[``); a broken
    record gives ``(line, BadRecord)`` and reading goes on at the next whole record (an object followed by ``,`` or
    ``]`` that ``is_record`` accepts, so that records holding objects resume at a record, not inside one)."""
    decoder = json.JSONDecoder()
    line, counted = 1, 0  # the line of ``counted``: newlines are counted once, from the last record on
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":  # (a list without its closing bracket ends with the text)
            return
        line, counted = line + text.count("\n", counted, pos), pos
        try:
            record, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            yield line, BadRecord("not JSON", str(exc)[:60])
            pos = _next_object(text, pos + 1, is_record)
            continue
        yield line, record


def _next_object(text: str, pos: int, is_record: Callable[[Any], bool] | None = None) -> int:
    """Where reading a JSON list goes on after a broken record: the next ``{`` that starts a whole object followed
    by ``,`` or ``]`` (and accepted by ``is_record``), else the end of the text."""
    decoder = json.JSONDecoder()
    while (pos := text.find("{", pos)) >= 0:
        try:
            found, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos += 1
            continue
        if text[end:].lstrip()[:1] in (",", "]") and (is_record is None or is_record(found)):
            return pos
        pos += 1
    return len(text)


def read_json_records(path: Path, expected: str, make: Callable[[Any, int], T]) -> tuple[list[T], Skips]:
    """What ``make(record, index)`` makes of each record of ``path``, and the records it refused (by raising
    :class:`BadRecord`, or not JSON) counted and named at their line.

    Args:
        path: a JSON list or JSON lines file (UTF-8).
        expected: what the file should be, for the error of a missing file (``"a TACRED file"``).
        make: the example of one record (its position from 0 is ``index``); raises :class:`BadRecord`.

    Returns:
        The examples and the :class:`~probes.reading.Skips`.

    Raises:
        InputFormatError: a missing file or a JSON list that is not UTF-8.
    """
    skips = Skips()
    made: list[T] = []
    for index, (line, record) in enumerate(json_records(path, file_bytes(path, expected=expected))):
        try:
            if isinstance(record, BadRecord):
                raise record
            made.append(make(record, index))
        except BadRecord as bad:
            skips.add(path, line, bad.reason, bad.detail)
    return made, skips
