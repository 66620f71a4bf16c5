"""Fuzzing the ReCoRD reader with randomly corrupted passage records.

A random valid file (SuperGLUE's JSON lines, or the original layout's ``{"data": [...]}``) has one passage record
corrupted (cut short, a field dropped, a field of the wrong type, an entity span out of range, garbage or bytes that
are not UTF-8 inserted, duplicated): the bad record is counted and named at its line, and every record around it is
still read, unchanged.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kb.errors import InputFormatError
from probes.transfer.readers.record import PLACEHOLDER, RecordExample, read_record
from tests.fuzz.strategies import examples, skip_report_lines, unicode_text

BAD_UTF8 = st.sampled_from([b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"caf\xe9"])
KINDS = ["truncate", "drop field", "wrong type", "span out of range", "garbage", "bad utf-8", "duplicate"]


@st.composite
def records(draw: st.DrawFn, ident: int) -> tuple[dict, RecordExample]:
    """A passage record (SuperGLUE layout, inclusive ends) with one entity and one query, and its example."""
    left, right = draw(unicode_text(max_size=6)), draw(unicode_text(max_size=6))
    mention = draw(unicode_text(min_size=1, max_size=3))
    query = draw(unicode_text(max_size=4)) + PLACEHOLDER + draw(unicode_text(max_size=4))
    text, span = left + mention + right, (len(left), len(left) + len(mention))
    entity = {"start": span[0], "end": span[1] - 1}
    record = {
        "idx": ident,
        "passage": {"text": text, "entities": [entity]},
        "qas": [{"idx": ident, "query": query, "answers": [{**entity, "text": mention}]}],
    }
    return record, RecordExample(str(ident), str(ident), text, (span,), query, (mention,), (span,))


def _corrupt(data: st.DataObject, line: bytes, record: dict, kind: str) -> bytes:
    if kind == "truncate":
        return line[: data.draw(st.integers(1, len(line) - 1))]
    if kind == "drop field":
        field = data.draw(st.sampled_from(["passage", "qas"]))
        return json.dumps({k: v for k, v in record.items() if k != field}).encode()
    if kind == "wrong type":
        field, value = data.draw(st.sampled_from([("passage", "text"), ("qas", {}), ("passage", {"text": 3})]))
        return json.dumps({**record, field: value}).encode()
    if kind == "span out of range":
        end = len(record["passage"]["text"]) + data.draw(st.integers(0, 5))
        return json.dumps({**record, "passage": {**record["passage"], "entities": [{"start": 0, "end": end}]}}).encode()
    junk = data.draw(
        st.binary(min_size=1, max_size=4).map(lambda b: b.replace(b"\n", b"")) if kind == "garbage" else BAD_UTF8
    )
    at = data.draw(st.integers(0, len(line)))
    return line[:at] + junk + line[at:]


def _read(name: str, content: bytes):
    """:func:`read_record` of ``content`` written to a file ``name``, and the file's path (gone after reading)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        return read_record(path), path


def _around(result, expected: list[RecordExample], i: int, path: Path, line: int) -> tuple[list, list[int]]:
    """Check that the records before and after the ``i``-th are read unchanged and that only ``line`` is named;
    returns what was read of the ``i``-th record and the lines named."""
    after = len(result.examples) - (len(expected) - i - 1)
    assert result.examples[:i] == expected[:i] and result.examples[after:] == expected[i + 1 :]
    named = skip_report_lines(result.examples_skipped, path)
    assert set(named) <= {line}
    return result.examples[i:after], named


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_record_bad_json_line_is_skipped_where_it_is(data, kind):
    drawn = [data.draw(records(k), label=f"record {k}") for k in range(data.draw(st.integers(2, 5), label="records"))]
    expected = [e for _, e in drawn]
    lines = [json.dumps(r, ensure_ascii=data.draw(st.booleans())).encode() for r, _ in drawn]
    i = data.draw(st.integers(0, len(drawn) - 1), label="corrupted")
    if kind == "duplicate":
        result, _ = _read("dup.jsonl", b"\n".join([*lines[: i + 1], *lines[i:]]) + b"\n")
        assert result.examples == [*expected[: i + 1], *expected[i:]] and not result.skipped
        return
    lines[i] = _corrupt(data, lines[i], drawn[i][0], kind)
    result, path = _read("bad.jsonl", b"\n".join(lines) + b"\n")
    middle, named = _around(result, expected, i, path, i + 1)
    assert len(middle) + len(named) == 1
    if kind in ("drop field", "wrong type", "span out of range", "bad utf-8"):
        assert not middle and sum(result.skipped.values()) == 1


@settings(max_examples=examples(20))
@given(data=st.data())
def test_record_original_layout_keeps_the_passages_around_a_broken_one(data):
    drawn = [data.draw(records(k), label=f"record {k}") for k in range(data.draw(st.integers(2, 5), label="records"))]
    items = [json.dumps(r).encode() for r, _ in drawn]  # ASCII: a cut never splits a character
    i = data.draw(st.integers(0, len(drawn) - 1), label="corrupted")
    kind = data.draw(st.sampled_from(["truncate", "drop field", "bad utf-8"]))
    items[i] = _corrupt(data, items[i], drawn[i][0], kind)
    content = b'{"version": "v1.0",\n"data": [\n' + b",\n".join(items) + b"\n]}\n"
    if kind == "bad utf-8":
        with pytest.raises(InputFormatError, match=f"record.json:{i + 3}: bytes that are not UTF-8"):
            _read("record.json", content)
        return
    result, path = _read("record.json", content)
    absorbed = _absorbed(items, i)
    expected = [e for j, (_, e) in enumerate(drawn) if not i < j <= i + absorbed]
    middle, named = _around(result, expected, i, path, i + 3)
    if absorbed:  # the cut record closed only by taking in the next ones: one JSON value, named at its line
        assert named == [i + 3] and len(middle) <= len(drawn[i][0]["qas"])
    else:
        assert len(middle) + len(named) == 1


def _absorbed(items: list[bytes], i: int) -> int:
    """How many of the records after the ``i``-th a JSON reader takes in with it: a truncated record can become
    valid JSON by closing on the next record's brackets (``"qas": [{...}`` + ``,{next}`` + ``]}``); no reader can
    tell that apart from a query list, so those records are not expected back."""
    tail = b",\n".join(items[i:]).decode() + "\n]}\n"
    try:
        _, end = json.JSONDecoder().raw_decode(tail)
    except json.JSONDecodeError:
        return 0
    starts, pos = [], 0
    for item in items[i:]:
        starts.append(pos)
        pos += len(item) + 2
    return sum(1 for start in starts[1:] if start < end)
