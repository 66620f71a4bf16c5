"""Fuzzing the Open Entity reader (entity typing) with randomly corrupted records.

A random valid file of records (JSON lines or a JSON list) has one record corrupted (cut short, a field dropped,
a field of the wrong type, a span out of range, garbage or bytes that are not UTF-8 inserted, duplicated): the
bad record is counted and named at its line, and every record around it is still read, unchanged. A JSON list
that is not UTF-8 is an :class:`kb.errors.InputFormatError` naming the file and line.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kb.errors import InputFormatError
from probes.transfer.readers.typing import GENERAL_TYPES, TypingExample, read_typing
from tests.fuzz.strategies import examples, skip_report_lines, unicode_text

BAD_UTF8 = st.sampled_from([b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"caf\xe9"])
KINDS = ["truncate", "drop field", "wrong type", "span out of range", "garbage", "bad utf-8", "duplicate"]


@st.composite
def records(draw: st.DrawFn, ident: int) -> tuple[dict, TypingExample]:
    """A record with a non-blank mention and the example the reader should make of it."""
    left, right = draw(unicode_text(max_size=6)), draw(unicode_text(max_size=6))
    mention = draw(unicode_text(min_size=1, max_size=3).filter(str.strip))
    labels = draw(st.lists(st.sampled_from([*GENERAL_TYPES, "city", "politician"]), max_size=4))
    text = left + mention + right
    record = {"id": str(ident), "sent": text, "start": len(left), "end": len(left) + len(mention), "labels": labels}
    kept = tuple(sorted({l for l in labels if l in GENERAL_TYPES}))
    return record, TypingExample(str(ident), text, (len(left), len(left) + len(mention)), kept)


def _corrupt(data: st.DataObject, line: bytes, record: dict, kind: str) -> bytes:
    if kind == "truncate":
        return line[: data.draw(st.integers(1, len(line) - 1))]
    if kind == "drop field":
        field = data.draw(st.sampled_from(["sent", "start", "end", "labels"]))
        return json.dumps({k: v for k, v in record.items() if k != field}).encode()
    if kind == "wrong type":
        field, value = data.draw(
            st.sampled_from([("sent", 3), ("start", "0"), ("end", 1.5), ("labels", "person"), ("labels", [1])])
        )
        return json.dumps({**record, field: value}).encode()
    if kind == "span out of range":
        return json.dumps({**record, "end": len(record["sent"]) + data.draw(st.integers(1, 5))}).encode()
    junk = data.draw(
        st.binary(min_size=1, max_size=4).map(lambda b: b.replace(b"\n", b"")) if kind == "garbage" else BAD_UTF8
    )
    at = data.draw(st.integers(0, len(line)))
    return line[:at] + junk + line[at:]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_typing_bad_json_line_is_skipped_where_it_is(data, kind):
    n = data.draw(st.integers(2, 5), label="records")
    drawn = [data.draw(records(k), label=f"record {k}") for k in range(n)]
    lines = [json.dumps(r, ensure_ascii=data.draw(st.booleans())).encode() for r, _ in drawn]
    i = data.draw(st.integers(0, n - 1), label="corrupted")
    bad = list(lines)
    if kind == "duplicate":
        bad.insert(i, lines[i])
    else:
        bad[i] = _corrupt(data, lines[i], drawn[i][0], kind)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.jsonl"
        path.write_bytes(b"\n".join(bad) + b"\n")
        try:
            result = read_typing(path)
        except InputFormatError as exc:  # only when nothing at all could be read
            assert n == 1 and str(path) in str(exc)
            return
    expected = [e for _, e in drawn]
    got = result.examples
    if kind == "duplicate":
        assert got == [*expected[: i + 1], expected[i], *expected[i + 1 :]] and not result.skipped
        return
    assert got[:i] == expected[:i] and got[len(got) - (n - i - 1) :] == expected[i + 1 :]
    middle = got[i : len(got) - (n - i - 1)]
    skipped_lines = skip_report_lines(result.examples_skipped, path)
    assert len(middle) + len(skipped_lines) == 1 and all(line == i + 1 for line in skipped_lines)
    if kind in ("drop field", "wrong type", "span out of range", "bad utf-8"):
        assert not middle and sum(result.skipped.values()) == 1


@settings(max_examples=examples(20))
@given(data=st.data())
def test_typing_json_list_keeps_the_records_around_a_broken_one(data):
    n = data.draw(st.integers(2, 5), label="records")
    drawn = [data.draw(records(k), label=f"record {k}") for k in range(n)]
    items = [json.dumps(r).encode() for r, _ in drawn]  # ASCII: a cut never splits a character
    i = data.draw(st.integers(0, n - 1), label="corrupted")
    kind = data.draw(st.sampled_from(["truncate", "drop field", "bad utf-8"]))
    items[i] = _corrupt(data, items[i], drawn[i][0], kind)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "list.json"
        path.write_bytes(b"[\n" + b",\n".join(items) + b"\n]\n")
        if kind == "bad utf-8":
            with pytest.raises(InputFormatError, match=re.escape(f"{path}:{i + 2}: bytes that are not UTF-8")):
                read_typing(path)
            return
        result = read_typing(path)
    expected = [e for _, e in drawn]
    got = result.examples
    assert got[:i] == expected[:i] and got[len(got) - (n - i - 1) :] == expected[i + 1 :]
    middle = got[i : len(got) - (n - i - 1)]
    skipped_lines = skip_report_lines(result.examples_skipped, path)
    # a "{}" inside the broken record's text may be taken for a record of its own (and skipped, on the same line)
    assert len(middle) <= 1 and (middle or skipped_lines) and all(line == i + 2 for line in skipped_lines)
    if kind == "drop field":
        assert not middle
