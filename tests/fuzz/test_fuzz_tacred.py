"""Fuzzing the TACRED reader (relation classification) with randomly corrupted records.

A random valid file of TACRED records has one record corrupted (cut short, a field dropped, a field of the
wrong type, an entity index outside the sentence, subject and object made to overlap, garbage inserted,
duplicated): the bad record is counted and named at its line, and every record around it is still read,
unchanged, as the example the words and indices say.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kb.errors import InputFormatError
from probes.transfer.readers.relations import ReExample
from probes.transfer.readers.tacred import read_tacred
from tests.fuzz.strategies import examples, skip_report_lines, unicode_text

WORD = unicode_text(min_size=1, max_size=2).map(lambda w: w.replace(" ", "_")).filter(str.strip)
RELATIONS = st.sampled_from(["no_relation", "per:title", "org:founded_by", "per:city_of_birth"])
#: Corruptions that leave a whole JSON object (the record alone is refused) and those that may not.
OBJECT_KINDS = ["drop field", "wrong type", "index out of range", "overlap"]
TEXT_KINDS = ["truncate", "garbage", "duplicate"]


@st.composite
def tacred_record(draw: st.DrawFn, ident: int) -> tuple[dict, ReExample]:
    """A record with two disjoint entities and the example :func:`read_tacred` should make of it."""
    tokens = draw(st.lists(WORD, min_size=2, max_size=8))
    middle = draw(st.integers(1, len(tokens) - 1))  # the first entity lies before it, the second from it on
    a = draw(st.integers(0, middle - 1))
    c = draw(st.integers(middle, len(tokens) - 1))
    first, second = (a, draw(st.integers(a, middle - 1))), (c, draw(st.integers(c, len(tokens) - 1)))
    subject, obj = (first, second) if draw(st.booleans()) else (second, first)
    relation = draw(RELATIONS)
    record = {
        "id": f"r{ident}",
        "token": tokens,
        "subj_start": subject[0],
        "subj_end": subject[1],
        "obj_start": obj[0],
        "obj_end": obj[1],
        "subj_type": "PERSON",
        "obj_type": "ORGANIZATION",
        "relation": relation,
    }
    starts = [sum(len(t) + 1 for t in tokens[:i]) for i in range(len(tokens))]

    def span(a: int, b: int) -> tuple[int, int]:
        return starts[a], starts[b] + len(tokens[b])

    example = ReExample(
        f"r{ident}", " ".join(tokens), span(*subject), span(*obj), relation, None, "PERSON", "ORGANIZATION"
    )
    return record, example


def _broken(data: st.DataObject, record: dict, kind: str) -> str:
    """The record's JSON text with one corruption of ``kind``."""
    text = json.dumps(record)
    if kind == "drop field":
        name = data.draw(st.sampled_from(["token", "subj_start", "obj_end", "relation"]))
        return json.dumps({k: v for k, v in record.items() if k != name})
    if kind == "wrong type":
        name, value = data.draw(
            st.sampled_from([("token", "a b"), ("subj_start", "0"), ("obj_end", 1.5), ("relation", 3), ("token", [1])])
        )
        return json.dumps({**record, name: value})
    if kind == "index out of range":
        return json.dumps({**record, "obj_end": len(record["token"]) + data.draw(st.integers(0, 3))})
    if kind == "overlap":
        return json.dumps({**record, "obj_start": record["subj_start"], "obj_end": record["subj_end"]})
    if kind == "truncate":
        return text[: data.draw(st.integers(1, len(text) - 1))]
    at = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(alphabet='{}[]",:x0 ', min_size=1, max_size=4))
    return text[:at] + junk + text[at:]


@pytest.mark.parametrize("kind", OBJECT_KINDS + TEXT_KINDS)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_tacred_json_lines_skip_the_bad_record_where_it_is(data, kind):
    drawn = [data.draw(tacred_record(k), label=f"record {k}") for k in range(data.draw(st.integers(2, 5)))]
    n, i = len(drawn), data.draw(st.integers(0, len(drawn) - 1), label="corrupted")
    lines = [json.dumps(r, ensure_ascii=data.draw(st.booleans())) for r, _ in drawn]
    if kind == "duplicate":
        lines.insert(i, lines[i])
    else:
        lines[i] = _broken(data, drawn[i][0], kind)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        result = read_tacred(path)
    want = [e for _, e in drawn]
    if kind == "duplicate":
        assert result.examples == [*want[: i + 1], *want[i:]] and not result.skipped
        return
    before, after = result.examples[:i], result.examples[len(result.examples) - (n - i - 1) :]
    assert before == want[:i] and after == want[i + 1 :]
    lines_named = skip_report_lines(result.examples_skipped, path)
    kept = len(result.examples) - (n - 1)  # the corrupted line read as a record anyway (garbage in a string)
    assert kept + len(lines_named) == 1 and set(lines_named) <= {i + 1}
    if kind in OBJECT_KINDS:
        assert kept == 0 and sum(result.skipped.values()) == 1


@pytest.mark.parametrize("kind", OBJECT_KINDS)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_tacred_json_list_refuses_only_the_bad_record(data, kind):
    drawn = [data.draw(tacred_record(k), label=f"record {k}") for k in range(data.draw(st.integers(1, 4)))]
    i = data.draw(st.integers(0, len(drawn) - 1), label="corrupted")
    items = [json.dumps(r) for r, _ in drawn]
    items[i] = _broken(data, drawn[i][0], kind)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "list.json"
        path.write_text("[\n" + ",\n".join(items) + "\n]\n", encoding="utf-8")
        if len(drawn) == 1:
            with pytest.raises(InputFormatError, match="no TACRED record found"):
                read_tacred(path)
            return
        result = read_tacred(path)
    assert result.examples == [e for k, (_, e) in enumerate(drawn) if k != i]
    assert skip_report_lines(result.examples_skipped, path) == [i + 2]  # "[" is line 1
