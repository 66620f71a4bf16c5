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


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_record_bad_json_line_is_skipped_where_it_is(data, kind):
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
        result = read_record(path)
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
def test_record_original_layout_keeps_the_passages_around_a_broken_one(data):
    n = data.draw(st.integers(2, 5), label="records")
    drawn = [data.draw(records(k), label=f"record {k}") for k in range(n)]
    items = [json.dumps(r).encode() for r, _ in drawn]  # ASCII: a cut never splits a character
    i = data.draw(st.integers(0, n - 1), label="corrupted")
    kind = data.draw(st.sampled_from(["truncate", "drop field", "bad utf-8"]))
    items[i] = _corrupt(data, items[i], drawn[i][0], kind)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "record.json"
        path.write_bytes(b'{"version": "v1.0",\n"data": [\n' + b",\n".join(items) + b"\n]}\n")
        if kind == "bad utf-8":
            with pytest.raises(InputFormatError, match=f"record.json:{i + 3}: bytes that are not UTF-8"):
                read_record(path)
            return
        result = read_record(path)
    expected = [e for _, e in drawn]
    got = result.examples
    assert got[:i] == expected[:i] and got[len(got) - (n - i - 1) :] == expected[i + 1 :]
    middle = got[i : len(got) - (n - i - 1)]
    skipped_lines = skip_report_lines(result.examples_skipped, path)
    assert len(middle) + len(skipped_lines) == 1 and all(line == i + 3 for line in skipped_lines)
