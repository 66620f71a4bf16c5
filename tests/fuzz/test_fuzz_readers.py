"""Fuzzing every dataset and dump reader with randomly corrupted records.

Each test writes a random valid file, corrupts one record (truncates it, drops a field, changes
a type, inserts garbage or bytes that are not UTF-8, duplicates it) and reads both files. What
every reader promises (see their module docs):

- readers that skip bad records (NER, RE, QA, Mewsli-9, the Wikidata and Wikipedia dumps): the
  bad record is counted and reported where it is (``file:line`` or the reader's location), and
  every record around it is still read, unchanged; a latin-1 fallback (NER, RE) reads the whole
  file as latin-1, so the records around are compared with the original read the same way;
- readers whose bad records are fatal (mLAMA) and fatal damage (a truncated compressed dump, a
  QA file that is not UTF-8 JSON): a :class:`kb.errors.InputFormatError` that names the file
  and where in it.
"""

from __future__ import annotations

import bz2
import copy
import gzip
import hashlib
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import assume, given, settings, strategies as st

from kb.errors import InputFormatError, MlukeError
from probes.transfer.readers.ner import NerSentence, read_ner
from probes.transfer.readers.relations import ReExample, read_re
from tests.fuzz.strategies import examples, unicode_text

#: Bytes that are not UTF-8: a stray continuation byte, cut sequences, an over-long form, a surrogate, beyond U+10FFFF.
BAD_UTF8 = st.sampled_from(
    [b"\xff", b"\xfe\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"caf\xe9"]
)
#: Random bytes inside one line (no line end).
GARBAGE = st.binary(min_size=1, max_size=6).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")).filter(bool)


def _layout(
    records: list[list[bytes]], header: tuple[bytes, ...] = (), sep: tuple[bytes, ...] = (b"",)
) -> tuple[bytes, list[range]]:
    """A file of records of lines, ``sep`` lines after each, and the line numbers (from 1) of each record."""
    lines, ranges = list(header), []
    for record in records:
        ranges.append(range(len(lines) + 1, len(lines) + 1 + len(record)))
        lines += record
        lines += sep
    return b"\n".join(lines) + b"\n", ranges


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read_as(good: bytes, bad: bytes) -> bytes:
    """``good`` as a reader with a latin-1 fallback reads ``bad``: UTF-8 if ``bad`` is, else latin-1 (re-encoded
    as UTF-8, so that reading it gives the latin-1 strings)."""
    return good if _is_utf8(bad) else good.decode("latin-1").encode("utf-8")


def _read_three(read, good: bytes, bad: bytes, tmp: str) -> tuple:
    """``read`` on the good file, on the bad one and on the good records as the bad file decodes (the baseline):
    ``(original, bad path, result, baseline)``."""
    original = read(_write(Path(tmp) / "good.txt", good))
    path = _write(Path(tmp) / "bad.txt", bad)
    return original, path, read(path), read(_write(Path(tmp) / "as-read.txt", _read_as(good, bad)))


def _lines_of(examples_: list[str], path: Path) -> list[int]:
    """The line numbers in the ``path:line: reason`` skip examples about ``path``."""
    found = [re.match(re.escape(str(path)) + r":(\d+): ", e) for e in examples_]
    assert all(found), examples_
    return [int(m.group(1)) for m in found]  # type: ignore[union-attr]


def _around(read: list, original: list, i: int, duplicated: bool) -> list:
    """Check that ``read`` is ``original`` with record ``i`` replaced by what it became; return that."""
    n = len(original)
    if duplicated:
        assert read == [*original[: i + 1], original[i], *original[i + 1 :]]
        return [original[i]] * 2
    after = n - i - 1
    assert read[:i] == original[:i]
    assert read[len(read) - after :] == original[i + 1 :] if after else True
    middle = read[i : len(read) - after]
    assert len(middle) <= 2, middle  # a record cut in two at most
    return middle


# -- NER (CoNLL-2002/2003, WikiANN) --

#: A word: no whitespace of any kind (a line of only a no-break space is a blank line to the reader).
_NER_WORD = st.text(
    st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc"), exclude_characters="\ufeff"),
    min_size=1,
    max_size=6,
).filter(lambda w: w != "-DOCSTART-")
_NER_TYPES = ("PER", "LOC", "ORG", "MISC")
_BAD_TAGS = (b"X-PER", b"B-", b"b-LOC", b"BLOC", b"I_PER", b"0", b"-", b"B-\xc2\xa0", b"")


@st.composite
def ner_sentences(draw: st.DrawFn, lang: str | None) -> NerSentence:
    words = draw(st.lists(_NER_WORD, min_size=2, max_size=5))
    spans, i = [], 0
    while i < len(words):
        if draw(st.booleans()):
            n = draw(st.integers(1, len(words) - i))
            spans.append((i, i + n, draw(st.sampled_from(_NER_TYPES))))
            i += n
        else:
            i += 1
    return NerSentence(tuple(words), tuple(spans), lang)


def _ner_lines(sentence: NerSentence, fmt: str) -> list[bytes]:
    tags = ["O"] * len(sentence.words)
    for s, e, t in sentence.spans:
        tags[s:e] = [f"B-{t}"] + [f"I-{t}"] * (e - s - 1)
    if fmt == "wikiann":
        return [f"{sentence.lang}:{w}\t{t}".encode() for w, t in zip(sentence.words, tags)]
    middle = " NN I-NP" if fmt == "conll4" else ""
    return [f"{w}{middle} {t}".encode() for w, t in zip(sentence.words, tags)]


@pytest.mark.parametrize(
    "kind", ["drop tag", "bad tag", "other type", "I- tag", "truncate", "garbage", "bad utf-8", "no lang", "duplicate"]
)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_ner_bad_line_drops_its_sentence_only(data, kind):
    fmt = data.draw(st.sampled_from(["wikiann", "conll2", "conll4"] if kind != "no lang" else ["wikiann"]), label="fmt")
    langs = st.sampled_from(["en", "de", "ja", "zh-min-nan"]) if fmt == "wikiann" else st.none()
    sentences = data.draw(st.lists(langs.flatmap(ner_sentences), min_size=2, max_size=5), label="sentences")
    records = [_ner_lines(s, fmt) for s in sentences]
    header = () if fmt == "wikiann" else (b"-DOCSTART- -X- -X- O" if fmt == "conll4" else b"-DOCSTART- O", b"")
    i = data.draw(st.integers(0, len(records) - 1), label="sentence")
    j = data.draw(st.integers(0, len(records[i]) - 1), label="line")
    line = records[i][j]
    word_end = line.index(b"\t" if fmt == "wikiann" else b" ")
    mutated = [list(r) for r in records]
    if kind == "duplicate":
        mutated.insert(i, list(records[i]))
    elif kind == "drop tag":
        mutated[i][j] = line[:word_end]
    elif kind in ("bad tag", "other type", "I- tag"):
        tag = line[word_end + 1 :].split(b" ")[-1]
        new = {
            "bad tag": data.draw(st.sampled_from(_BAD_TAGS)),
            "other type": b"B-OTHER",
            "I- tag": b"I-" + (tag[2:] or b"PER"),
        }[kind]
        mutated[i][j] = line[: len(line) - len(tag)] + new
    elif kind == "truncate":
        mutated[i][j] = line[: data.draw(st.integers(1, len(line) - 1))]
    elif kind in ("garbage", "bad utf-8"):
        junk = data.draw(GARBAGE if kind == "garbage" else BAD_UTF8)
        at = data.draw(st.integers(line.index(b":") + 1 if fmt == "wikiann" else 0, word_end))
        mutated[i][j] = line[:at] + junk + line[at:]
    else:  # no lang
        mutated[i][j] = line.split(b":", 1)[1]
    good, _ = _layout(records, header)
    bad, bad_ranges = _layout(mutated, header)
    with tempfile.TemporaryDirectory() as tmp:
        original, path, result, baseline = _read_three(read_ner, good, bad, tmp)
    assert [(s.words, s.spans, s.lang) for s in original] == [(s.words, s.spans, s.lang) for s in sentences]
    baseline = baseline.sentences
    assert result.encoding == ("utf-8" if _is_utf8(bad) else "latin-1")
    middle = _around(result.sentences, baseline, i, kind == "duplicate")
    lines = _lines_of(result.examples, path)
    if kind == "duplicate":
        assert result.skipped == {} and result.dropped_sentences == 0
    else:
        assert all(n in bad_ranges[i] for n in lines), (lines, bad_ranges[i])
        assert result.dropped_sentences <= 1 and (result.dropped_sentences == 0) == (len(middle) > 0)
        if result.dropped_sentences:  # a dropped sentence is always counted with its line
            assert sum(result.skipped.values()) >= 1 and lines
    if kind in ("drop tag", "bad tag", "no lang"):
        assert not middle and result.dropped_sentences == 1 and lines == [bad_ranges[i][j]]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- RE (KBP37, RELX) --

_RE_WORD = st.text(
    st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc"), exclude_characters="<>\ufeff"),
    min_size=1,
    max_size=6,
)
_RE_LABELS = ("no_relation", "per:employee_of(e1,e2)", "org:founded_by(e2,e1)", "per:city_of_birth(e1,e2)")


@st.composite
def re_examples(draw: st.DrawFn, ident: str) -> tuple[ReExample, bytes]:
    """An example and its sentence line, markers spaced (`` <e1> x </e1> ``) in the words."""
    words = draw(st.lists(_RE_WORD, min_size=2, max_size=8))
    cuts = sorted(draw(st.lists(st.integers(0, len(words)), min_size=4, max_size=4)))
    if cuts[0] == cuts[1] or cuts[2] == cuts[3]:  # make both entities non-empty
        cuts = [0, 1, len(words) - 1, len(words)]
    first, second = draw(st.permutations(["1", "2"]))
    marked = []
    for k, w in enumerate(words):
        marked += [f"</e{n}>" for n, end in ((first, cuts[1]), (second, cuts[3])) if end == k]
        marked += [f"<e{n}>" for n, start in ((first, cuts[0]), (second, cuts[2])) if start == k]
        marked.append(w)
    marked += [f"</e{n}>" for n, end in ((first, cuts[1]), (second, cuts[3])) if end == len(words)]
    text = " ".join(words)
    starts = [len(" ".join(words[:c])) + (1 if c else 0) for c in cuts]
    ends = [len(" ".join(words[:c])) for c in cuts]
    spans = {first: (starts[0], ends[1]), second: (starts[2], ends[3])}
    label = draw(st.sampled_from(_RE_LABELS))
    return ReExample(ident, text, spans["1"], spans["2"], label), f'{ident}\t" {" ".join(marked)} "'.encode()


@pytest.mark.parametrize(
    "kind",
    [
        "truncate sentence",
        "truncate label",
        "drop label",
        "drop marker",
        "drop id",
        "drop tab",
        "flip label",
        "bad label",
        "garbage",
        "bad utf-8",
        "duplicate",
    ],
)
@settings(max_examples=examples(15))
@given(data=st.data())
def test_re_bad_block_is_skipped_where_it_is(data, kind):
    n = data.draw(st.integers(2, 5), label="examples")
    drawn = [data.draw(re_examples(str(k)), label=f"example {k}") for k in range(n)]
    records = [[line, ex.label.encode()] for ex, line in drawn]
    i = data.draw(st.integers(0, n - 1), label="block")
    sentence, label = records[i]
    mutated = [list(r) for r in records]
    if kind == "duplicate":
        mutated.insert(i, list(records[i]))
    elif kind == "truncate sentence":
        mutated[i][0] = sentence[: data.draw(st.integers(1, len(sentence) - 1))]
    elif kind == "truncate label":
        mutated[i][1] = label[: data.draw(st.integers(1, len(label) - 1))]
    elif kind == "drop label":
        mutated[i] = [sentence]
    elif kind == "drop marker":
        mutated[i][0] = sentence.replace(data.draw(st.sampled_from([b"<e1>", b"</e1>", b"<e2>", b"</e2>"])), b"", 1)
    elif kind == "drop id":
        mutated[i][0] = sentence[sentence.index(b"\t") :]
    elif kind == "drop tab":
        mutated[i][0] = sentence.replace(b"\t", b" ")
    elif kind in ("flip label", "bad label"):
        choices = (
            [x.encode() for x in _RE_LABELS]
            if kind == "flip label"
            else [b"per:employee_of", b"per:employee_of(e1,e3)", b"(e1,e2)", b"no relation", b"x(e1, e2)"]
        )
        mutated[i][1] = data.draw(st.sampled_from([c for c in choices if c != label]))
    else:
        junk = data.draw(GARBAGE if kind == "garbage" else BAD_UTF8)
        at = data.draw(st.integers(0, len(sentence)))
        mutated[i][0] = sentence[:at] + junk + sentence[at:]
    good, _ = _layout(records)
    bad, bad_ranges = _layout(mutated)
    with tempfile.TemporaryDirectory() as tmp:
        original, path, result, baseline = _read_three(read_re, good, bad, tmp)
    assert original.examples == [ex for ex, _ in drawn]
    baseline = baseline.examples
    assert result.encoding == ("utf-8" if _is_utf8(bad) else "latin-1")
    middle = _around(result.examples, baseline, i, kind == "duplicate")
    lines = _lines_of(result.examples_skipped, path)
    assert all(n in bad_ranges[i] for n in lines) and len(lines) == sum(result.skipped.values())
    assert len(middle) + len(lines) == (2 if kind == "duplicate" else 1)  # read, or skipped and reported
    if kind in ("drop label", "drop id", "drop tab", "bad label", "drop marker"):
        assert not middle
    if kind == "flip label":
        assert [(e.text, e.head, e.tail) for e in middle] == [(e.text, e.head, e.tail) for e in baseline[i : i + 1]]


# -- QA (SQuAD 1.1 layout) --


@st.composite
def squad_data(draw: st.DrawFn) -> dict:
    """A SQuAD-layout file: articles of paragraphs of questions with answers at their places in the context.
    Question ids have one width, so a cut id is never another question's."""
    counter = iter(range(10_000))
    articles = []
    for a in range(draw(st.integers(1, 3))):
        paragraphs = []
        for _ in range(draw(st.integers(1, 2))):
            context = draw(unicode_text(min_size=1, max_size=12))
            qas = []
            for _ in range(draw(st.integers(1, 3))):
                answers = []
                for _ in range(draw(st.integers(1, 3))):
                    start = draw(st.integers(0, len(context) - 1))
                    end = draw(st.integers(start + 1, len(context)))
                    answers.append({"answer_start": start, "text": context[start:end]})
                qas.append(
                    {
                        "id": f"q{next(counter):04d}",
                        "question": "Q? " + draw(unicode_text(max_size=3)),
                        "answers": answers,
                    }
                )
            paragraphs.append({"context": context, "qas": qas})
        articles.append({"title": f"article {a}", "paragraphs": paragraphs})
    return {"version": "1.1", "data": articles}


#: What each corruption of one JSON node does, by the node's level: replace it, drop or retype a field, cut a string.
_NOT_OBJECT = st.sampled_from([[], "x", 3, None, [{"a": 1}]])
_QA_MUTATIONS = {
    "article": ["not an object", "drop paragraphs", "paragraphs type", "title type", "duplicate"],
    "paragraph": [
        "not an object",
        "drop context",
        "context type",
        "truncate context",
        "drop qas",
        "qas type",
        "duplicate",
    ],
    "question": [
        "not an object",
        "drop id",
        "id type",
        "truncate id",
        "drop question",
        "question type",
        "blank question",
        "drop answers",
        "answers type",
        "no answers",
        "duplicate",
    ],
    "answer": [
        "not an object",
        "drop answer_start",
        "answer_start type",
        "drop text",
        "text type",
        "truncate text",
        "shift start",
        "duplicate",
    ],
}
#: Corruptions above the answers that leave the records below the node readable; after every other one they cannot
#: be read.
_QA_READABLE = {"title type", "truncate context", "id type", "truncate id", "duplicate"}
_QA_FATAL = {k for level in ("article", "paragraph", "question") for k in _QA_MUTATIONS[level]} - _QA_READABLE


def _questions(data: dict) -> list[tuple[tuple[int, ...], dict]]:
    """Every question record with its path (article, paragraph, question), in file order."""
    return [
        ((a, p, q), qa)
        for a, art in enumerate(data["data"])
        for p, par in enumerate(art["paragraphs"])
        for q, qa in enumerate(par["qas"])
    ]


@pytest.mark.parametrize("level, kind", [(level, kind) for level, kinds in _QA_MUTATIONS.items() for kind in kinds])
@settings(max_examples=examples(8))
@given(data=st.data())
def test_qa_bad_record_is_skipped_with_its_location(data, level, kind):
    from probes.transfer.readers.qa import read_squad

    good = data.draw(squad_data(), label="file")
    bad = copy.deepcopy(good)
    questions = _questions(good)
    # the node to corrupt: its path, and the positions (in file order) of the questions under it
    (a, p, q), _ = data.draw(st.sampled_from(questions), label="question")
    path = {"article": (a,), "paragraph": (a, p), "question": (a, p, q), "answer": (a, p, q)}[level]
    under = [k for k, (where, _) in enumerate(questions) if where[: len(path)] == path]
    article = bad["data"][a]
    paragraph = article["paragraphs"][p]
    qa = paragraph["qas"][q]
    parent, key, node = {
        "article": (bad["data"], a, article),
        "paragraph": (article["paragraphs"], p, paragraph),
        "question": (paragraph["qas"], q, qa),
    }.get(level, (None, None, None))
    new_id = None
    if level == "answer":
        k = data.draw(st.integers(0, len(qa["answers"]) - 1), label="answer")
        parent, key, node = qa["answers"], k, qa["answers"][k]
    if kind == "not an object":
        parent[key] = data.draw(_NOT_OBJECT)
    elif kind == "duplicate":
        parent.insert(key, copy.deepcopy(node))
    elif kind.startswith("drop "):
        del node[kind[5:]]
    elif kind.endswith(" type"):
        field = kind[:-5]
        node[field] = data.draw(
            st.sampled_from([3, 2.5, True, None, ["x"], {"x": 1}, "x"]).filter(
                lambda v: not isinstance(v, type(node[field])) or isinstance(v, bool)
            )
        )
        new_id = node[field] if field == "id" else None
    elif kind.startswith("truncate "):
        field = kind[9:]
        node[field] = node[field][: data.draw(st.integers(0, len(node[field]) - 1))]
        new_id = node[field] if field == "id" else None
    elif kind == "blank question":
        node["question"] = data.draw(st.sampled_from(["", " ", "\n\t"]))
    elif kind == "no answers":
        node["answers"] = []
    elif kind == "shift start":
        node["answer_start"] += data.draw(st.sampled_from([-1, 1, 1000]))
    with tempfile.TemporaryDirectory() as tmp:
        original = read_squad(_write(Path(tmp) / "good.json", json.dumps(good, ensure_ascii=False).encode()))
        assert [e.id for e in original] == [qa["id"] for _, qa in questions] and original.skipped == {}
        file = _write(Path(tmp) / "bad.json", json.dumps(bad, ensure_ascii=False).encode())
        try:
            result = read_squad(file)
        except InputFormatError as exc:  # only when nothing at all could be read
            assert len(under) == len(questions) and "no questions with answers found" in str(exc), exc
            return
    lo, hi = under[0], under[-1] + 1
    after = len(questions) - hi
    assert result.examples[:lo] == original.examples[:lo]
    assert result.examples[len(result.examples) - after :] == original.examples[hi:] if after else True
    middle = result.examples[lo : len(result.examples) - after]
    touched_ids = {questions[k][1]["id"] for k in under} | {str(new_id)}
    for example in result.examples_skipped:  # each skip is reported at the corrupted node or below it
        where = re.match(re.escape(str(file)) + r" \[(.*?)\]: ", example)
        assert where, example
        location = where.group(1)
        if location.startswith("question "):
            assert location[9:] in touched_ids, (location, touched_ids)
        else:
            assert location.startswith("article " + " paragraph ".join(map(str, path[:2]))), (location, path)
    if kind == "duplicate" and level == "answer":  # a repeated answer is kept, as annotators' repeats are
        answers = list(original.examples[lo].answers)
        assert middle[0].answers == tuple(answers[: k + 1] + answers[k:]) and result.skipped == {}
    elif kind == "duplicate":  # the copies are skipped as duplicate ids
        assert result.examples == original.examples
        assert result.skipped == {"duplicate question id": len(under)}
    elif kind in _QA_FATAL and level != "answer":
        assert middle == [] and sum(result.skipped.values()) >= 1
    else:  # the questions under the node are read (maybe changed: a cut answer, a new title) or skipped
        assert len(middle) <= len(under)
        if len(middle) < len(under) or (level == "answer" and len(middle[0].answers) < len(qa["answers"])):
            assert sum(result.skipped.values()) >= 1
        for example in middle:
            assert example.id in touched_ids


@pytest.mark.parametrize("kind", ["truncate", "bad utf-8"])
@settings(max_examples=examples(20))
@given(data=st.data())
def test_qa_file_that_is_not_utf8_json_fails_clearly(data, kind):
    from probes.transfer.readers.qa import read_squad

    good = json.dumps(data.draw(squad_data(), label="file"), ensure_ascii=False).encode()
    if kind == "truncate":
        bad = good[: data.draw(st.integers(0, len(good) - 1))]
        pattern = (
            r"bad\.json: not JSON \(line \d+: " if _is_utf8(bad) else r"bad\.json: bytes that are not UTF-8 at byte"
        )
    else:
        at = data.draw(st.integers(0, len(good)))
        bad = good[:at] + data.draw(BAD_UTF8) + good[at:]
        try:
            bad.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            pattern = rf"bad\.json: bytes that are not UTF-8 at byte {exc.start};"
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(InputFormatError, match=pattern):
        read_squad(_write(Path(tmp) / "bad.json", bad))


# -- Mewsli-9 --

_DOCS_HEADER = b"docid\ttitle\tcurid\trevid\turl\ttext_md5"
_MENTIONS_HEADER = b"docid\tposition\tlength\tmention\turl\tlang\tqid\tqid_in_refs\tfreq_bin"


@st.composite
def mewsli_folders(draw: st.DrawFn) -> tuple[dict[str, str], list[tuple[str, int, int, str, str]]]:
    """Documents ``{docid: text}`` (fixed-width ids, so a cut id is no other's) and mention rows
    ``(docid, start, end, surface, qid)`` in file order (surfaces without tabs or line ends)."""
    texts = {f"doc-{k:03d}": draw(unicode_text(min_size=1, max_size=10)) for k in range(draw(st.integers(1, 4)))}
    mentions = []
    for docid, text in texts.items():
        for _ in range(draw(st.integers(0, 3))):
            start = draw(st.integers(0, len(text) - 1))
            end = draw(st.integers(start + 1, len(text)))
            if not any(c in text[start:end] for c in "\t\n\r\x00"):
                mentions.append((docid, start, end, text[start:end], f"Q{len(mentions) + 1}"))
    return texts, draw(st.permutations(mentions))


def _mention_row(docid: str, start: int, end: int, surface: str, qid: str) -> bytes:
    """A mentions.tsv row as pandas writes it: a surface holding a quote is quoted, its quotes doubled."""
    if '"' in surface:
        surface = '"' + surface.replace('"', '""') + '"'
    return f"{docid}\t{start}\t{end - start}\t{surface}\thttps://en.wikipedia.org/wiki/X\ten\t{qid}\t1\t3".encode()


def _corrupt_row(data: st.DataObject, row: bytes, kind: str) -> bytes:
    fields = row.split(b"\t")
    if kind == "truncate":
        return row[: data.draw(st.integers(1, len(row) - 1))]
    if kind == "drop field":
        del fields[data.draw(st.integers(0, len(fields) - 1))]
    elif kind == "bad integer":
        fields[data.draw(st.sampled_from([1, 2]))] = data.draw(st.sampled_from([b"x", b"1.5", b"", b"0x1", b"-1"]))
    elif kind == "other mention":
        fields[3] = fields[3] + b"x"
    elif kind in ("garbage", "bad utf-8"):
        at = data.draw(st.integers(0, len(row)))
        return row[:at] + data.draw(GARBAGE if kind == "garbage" else BAD_UTF8) + row[at:]
    return b"\t".join(fields)


_MEWSLI_MUTATIONS = {
    "mentions.tsv": ["truncate", "drop field", "bad integer", "other mention", "garbage", "bad utf-8", "duplicate"],
    "docs.tsv": ["truncate", "drop field", "garbage", "bad utf-8", "duplicate"],
    "text": ["truncate", "garbage", "bad utf-8"],
}


@pytest.mark.parametrize("target, kind", [(t, kind) for t, kinds in _MEWSLI_MUTATIONS.items() for kind in kinds])
@settings(max_examples=examples(10))
@given(data=st.data())
def test_mewsli_bad_row_is_skipped_where_it_is(data, target, kind):
    from probes.mewsli import read_mewsli

    texts, mentions = data.draw(mewsli_folders(), label="dataset")
    docs_rows = [
        f"{d}\t{d} title\t1\t2\thttps://en.wikipedia.org/wiki/{d}\t{hashlib.md5(t.encode()).hexdigest()}".encode()
        for d, t in texts.items()
    ]
    mention_rows = [_mention_row(*m) for m in mentions]
    text_bytes = {d: t.encode() for d, t in texts.items()}
    assume(mentions or target != "mentions.tsv")
    rows = {"mentions.tsv": mention_rows, "docs.tsv": docs_rows, "text": list(text_bytes)}[target]
    r = data.draw(st.integers(0, len(rows) - 1), label="row")
    touched_doc = list(texts)[r] if target != "mentions.tsv" else None
    bad_rows, bad_texts = {"mentions.tsv": list(mention_rows), "docs.tsv": list(docs_rows)}, dict(text_bytes)
    if target == "text":
        raw = bad_texts[touched_doc]
        if kind == "truncate":
            bad_texts[touched_doc] = raw[: data.draw(st.integers(0, len(raw) - 1))]
        else:
            at = data.draw(st.integers(0, len(raw)))
            bad_texts[touched_doc] = raw[:at] + data.draw(GARBAGE if kind == "garbage" else BAD_UTF8) + raw[at:]
    elif kind == "duplicate":
        bad_rows[target].insert(r, rows[r])
    else:
        bad_rows[target][r] = _corrupt_row(data, rows[r], kind)

    def write(folder: Path, docs: list[bytes], mention_lines: list[bytes], files: dict[str, bytes]) -> Path:
        (folder / "en" / "text").mkdir(parents=True)
        _write(folder / "en" / "docs.tsv", b"\n".join([_DOCS_HEADER, *docs]) + b"\n")
        _write(folder / "en" / "mentions.tsv", b"\n".join([_MENTIONS_HEADER, *mention_lines]) + b"\n")
        for docid, raw in files.items():
            _write(folder / "en" / "text" / docid, raw)
        return folder

    with tempfile.TemporaryDirectory() as tmp:
        original = read_mewsli(write(Path(tmp) / "good", docs_rows, mention_rows, text_bytes))
        assert {d.docid: d.text for d in original} == texts and original.mentions == len(mentions)
        assert original.skipped == {}
        folder = write(Path(tmp) / "bad", bad_rows["docs.tsv"], bad_rows["mentions.tsv"], bad_texts)
        result = read_mewsli(folder)
    pairs = Counter((d.docid, m) for d in result for m in d.mentions)
    expected = Counter((d.docid, m) for d in original for m in d.mentions)
    docs_path, mentions_path = folder / "en" / "docs.tsv", folder / "en" / "mentions.tsv"
    if target == "mentions.tsv":  # every document; every mention but the corrupted row's
        assert {d.docid: d.text for d in result} == texts
        gold = mentions[r]
        touched = Counter(
            {
                (
                    gold[0],
                    next(
                        m
                        for d in original
                        if d.docid == gold[0]
                        for m in d.mentions
                        if (m.start, m.end, m.key) == (gold[1], gold[2], gold[4])
                    ),
                ): 1
            }
        )
        if kind == "duplicate":
            assert pairs == expected + touched and result.skipped == {}
        else:
            assert expected - touched <= pairs and sum((pairs - (expected - touched)).values()) <= 1
            assert (pairs == expected - touched) == (sum(result.skipped.values()) == 1)
            assert _lines_of(result.examples, mentions_path) == [r + 2] * len(result.examples)
        return
    # a document's row or text: every other document with its mentions; the touched one's mentions are
    # reported at their rows when the document is lost, the document at its row
    others = {d.docid: d for d in original if d.docid != touched_doc}
    assert {d.docid: d for d in result if d.docid in others} == others
    assert all(d.docid in others or d.docid == touched_doc for d in result) or kind == "garbage"
    own_lines = {k + 2 for k, m in enumerate(mentions) if m[0] == touched_doc}
    docs_line = r + 2 + (1 if kind == "duplicate" and target == "docs.tsv" else 0)
    for example in result.examples:
        if example.startswith(f"{docs_path}:"):
            assert _lines_of([example], docs_path) == [docs_line]
        else:
            assert _lines_of([example], mentions_path)[0] in own_lines
    if kind == "duplicate":
        assert result.docs == original.docs and result.skipped == {"duplicate docid": 1}
    if target == "text" and kind == "bad utf-8":
        assert touched_doc not in {d.docid for d in result} and result.skipped["unreadable text file"] == 1


# -- mLAMA --

_FACT_FIELDS = ("sub_uri", "sub_label", "obj_uri", "obj_label")
_MLAMA_MUTATIONS = {
    "facts": ["truncate", "drop field", "field type", "not an object", "garbage", "bad utf-8", "duplicate"],
    "templates": ["truncate", "drop field", "field type", "not an object", "bad utf-8", "unknown placeholder"],
    "objects": ["truncate", "not an object", "relation type", "objects type", "bad utf-8"],
}
#: Corruptions that make a file unreadable: always a clear error (mLAMA's bad records are fatal).
_MLAMA_FATAL = {
    "truncate",
    "drop field",
    "field type",
    "not an object",
    "bad utf-8",
    "unknown placeholder",
    "relation type",
    "objects type",
}


@st.composite
def mlama_facts(draw: st.DrawFn) -> list[dict]:
    """Facts of P36 with subjects and objects of their own (so that no label is shared between facts)."""
    labels = unicode_text(min_size=1, max_size=4)
    return [
        {
            "sub_uri": f"Q{1000 + k}",
            "sub_label": draw(labels),
            "obj_uri": f"Q{2000 + k}",
            "obj_label": draw(labels),
            "lineid": k,
        }
        for k in range(draw(st.integers(2, 6)))
    ]


def _jsonl_line(row: object) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode()


@pytest.mark.parametrize("target, kind", [(t, kind) for t, kinds in _MLAMA_MUTATIONS.items() for kind in kinds])
@settings(max_examples=examples(6))
@given(data=st.data(), blank_lines=st.integers(0, 2))
def test_mlama_bad_record_is_a_clear_error_naming_its_line(data, target, kind, blank_lines):
    from probes import read_mlama
    from tests.probes.conftest import write_mlama

    facts = data.draw(mlama_facts(), label="facts")
    with tempfile.TemporaryDirectory() as tmp:
        root = write_mlama(Path(tmp) / "mlama")
        en = root / "mlama1.1" / "en"
        facts_path, templates_path = en / "P36.jsonl", en / "templates.jsonl"
        objects_path = root / "TREx_multilingual_objects" / "en.json"
        _write(facts_path, b"".join(_jsonl_line(f) + b"\n" for f in facts))
        original = {r.relation: r for r in read_mlama(root, "en")}
        assert original["P36"].subjects == {f["sub_uri"]: f["sub_label"] for f in facts}
        path = {"facts": facts_path, "templates": templates_path, "objects": objects_path}[target]
        if target == "objects":
            doc = json.loads(objects_path.read_text(encoding="utf-8"))
            good = bad = json.dumps(doc, ensure_ascii=False).encode()
            if kind == "truncate":
                bad = good[: data.draw(st.integers(0, len(good) - 1))]
            elif kind == "not an object":
                bad = json.dumps(list(doc.values())).encode()
            elif kind == "relation type":
                bad = json.dumps({**doc, "P36": ["Tokyo"]}).encode()
            elif kind == "objects type":
                bad = json.dumps({**doc, "P36": {"objects": "Tokyo"}}).encode()
            else:
                at = data.draw(st.integers(0, len(good)))
                bad = good[:at] + data.draw(BAD_UTF8) + good[at:]
            _write(objects_path, bad)
            with pytest.raises(InputFormatError, match=re.escape(str(objects_path)) + ": "):
                read_mlama(root, "en")
            return
        lines = path.read_bytes().splitlines()
        i = data.draw(st.integers(0, len(facts) - 1 if target == "facts" else 1), label="line")  # P36 or P47
        row = json.loads(lines[i])
        if kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "truncate":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i]) - 1))]
        elif kind == "drop field":
            del row[data.draw(st.sampled_from(_FACT_FIELDS if target == "facts" else ("relation", "template")))]
            lines[i] = _jsonl_line(row)
        elif kind == "field type":
            field = data.draw(st.sampled_from(_FACT_FIELDS if target == "facts" else ("relation", "template")))
            row[field] = data.draw(st.sampled_from([5, None, ["Q1"], {"a": 1}, 1.5, True]))
            lines[i] = _jsonl_line(row)
        elif kind == "not an object":
            lines[i] = _jsonl_line(data.draw(st.sampled_from([list(row.values()), "x", 5, None])))
        elif kind == "unknown placeholder":
            lines[i] = _jsonl_line({**row, "template": "[X] is [Z] ."})
        else:
            at = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + data.draw(GARBAGE if kind == "garbage" else BAD_UTF8) + lines[i][at:]
        if lines[i].strip() == b"" and kind == "truncate":  # a line cut to nothing is no record at all
            lines[i] = b"{"
        _write(path, b"\n" * blank_lines + b"\n".join(lines) + b"\n")
        line = blank_lines + i + 1
        try:
            result = {r.relation: r for r in read_mlama(root, "en")}
        except MlukeError as exc:
            message = str(exc)
            assert isinstance(exc, InputFormatError) or kind == "unknown placeholder", message
            assert message.startswith(str(path)), message
            where = f"{path}, line {line}:" if kind != "unknown placeholder" else f"{path} ({row['relation']}):"
            assert message.startswith(where), (message, where)
            return
    assert kind not in _MLAMA_FATAL, kind
    if target == "templates":
        assert result == original
        return
    rel, before = result["P36"], original["P36"]
    for k, fact in enumerate(facts):  # every fact but the corrupted one is read unchanged
        if k != i:
            s, o = fact["sub_uri"], fact["obj_uri"]
            assert rel.subjects[s] == fact["sub_label"] and o in rel.gold[s]
            assert rel.object_labels[o] == fact["obj_label"]
    assert len(rel.subjects) <= len(before.subjects) + 1
    if kind == "duplicate":
        assert rel == before


# -- the Wikidata JSON dump --

_WD_LANGS = ("ar", "en", "fr", "ja")
_WD_MUTATIONS = ["truncate", "drop field", "field type", "not an object", "garbage", "bad utf-8", "duplicate"]


def _rows_of(packed) -> dict[tuple[str, str], list]:
    return {key: orjson.loads(data) for key, data in packed.tables.items()}


def _merge(parts: list[dict[tuple[str, str], list]]) -> dict[tuple[str, str], list]:
    out: dict[tuple[str, str], list] = {}
    for part in parts:
        for key, rows in part.items():
            out.setdefault(key, []).extend(rows)
    return out


@st.composite
def wikidata_dumps(draw: st.DrawFn, kind: str) -> tuple[list[bytes], int, bool]:
    """The fixture dump's lines with one entity line corrupted by ``kind``: (lines, its index, whether it
    is necessarily malformed)."""
    from tests.kb.sources.dump_fixtures import wikidata_lines

    lines = wikidata_lines(malformed=False)
    i = draw(st.integers(1, len(lines) - 2), label="entity line")
    line = lines[i]
    body, comma = (line[:-1], b",") if line.endswith(b",") else (line, b"")
    entity = orjson.loads(body)
    must_fail = kind in ("truncate", "not an object")
    if kind == "duplicate":
        lines.insert(i, body + b",")
    elif kind == "truncate":  # inside the object: never valid JSON
        lines[i] = body[: draw(st.integers(1, len(body) - 1))] + comma
    elif kind == "drop field":
        field = draw(st.sampled_from(sorted(entity)))
        del entity[field]
        must_fail = field in ("id", "type")
        lines[i] = orjson.dumps(entity) + comma
    elif kind == "field type":
        field = draw(st.sampled_from(["id", "type", "labels", "aliases", "claims", "sitelinks"]))
        entity[field] = draw(st.sampled_from([5, True, 1.5, None] + (["x"] if field not in ("id", "type") else [])))
        must_fail = True
        lines[i] = orjson.dumps(entity) + comma
    elif kind == "not an object":
        lines[i] = orjson.dumps(draw(st.sampled_from([list(entity), "x", 5, None]))) + comma
    else:
        at = draw(st.integers(0, len(body)))
        lines[i] = body[:at] + draw(GARBAGE if kind == "garbage" else BAD_UTF8) + body[at:] + comma
    return lines, i, must_fail


@pytest.mark.parametrize("kind", _WD_MUTATIONS)
@settings(max_examples=examples(12))
@given(data=st.data(), chunk_bytes=st.sampled_from([1 << 20, 1000, 300]))
def test_wikidata_bad_line_is_reported_at_its_line(data, kind, chunk_bytes):
    from kb.sources.dumps import read_wikidata
    from kb.sources.staging import connect_staging
    from kb.sources.wikidata import WIKIDATA_SCHEMA, WikidataOptions, parse_chunk
    from tests.kb.sources.dump_fixtures import wikidata_lines

    lines, i, must_fail = data.draw(wikidata_dumps(kind), label="dump")
    opts = WikidataOptions(_WD_LANGS)
    block = b"\n".join(lines) + b"\n"
    result = parse_chunk(block, opts)
    # each line on its own: the original's lines give the rows they always gave
    alone = [parse_chunk(line + b"\n", opts) for line in lines]
    originals = {line: parse_chunk(line + b"\n", opts) for line in wikidata_lines(malformed=False)}
    for k, line in enumerate(lines):
        if k != i and not (kind == "duplicate" and k == i + 1):
            assert _rows_of(alone[k]) == _rows_of(originals[line]) and not alone[k].malformed
    assert _rows_of(result) == _merge([_rows_of(p) for p in alone])  # no line takes or loses another's rows
    bad = [n for n, _ in result.malformed]
    assert bad in ([], [i]) and result.counts.get("malformed", 0) == len(bad)
    if must_fail:
        assert bad == [i] and not _rows_of(alone[i])
    assert Counter(result.counts) == sum((Counter(p.counts) for p in alone), Counter())
    if bad:  # a malformed line gives no rows at all, and counts only as a malformed line
        assert not _rows_of(alone[i]) and alone[i].counts == {"lines": 1, "malformed": 1}
        assert "expected one JSON entity per line" in result.malformed[0][1]
    # the build's reader, cutting the file into chunks: the same rows, the malformed line numbered in the file
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "latest-all.json", block)
        conn = connect_staging(Path(tmp) / "wikidata.sqlite", WIKIDATA_SCHEMA)
        try:
            stage = read_wikidata(path, conn, opts, workers=1, chunk_bytes=chunk_bytes, progress=lambda n: None)
            staged = _merge(
                [
                    {(t, lang): orjson.loads(data)}
                    for t, lang, data in conn.execute("SELECT tbl, lang, data FROM s_rows ORDER BY rowid")
                ]
            )
            malformed = conn.execute("SELECT line FROM malformed ORDER BY line").fetchall()
        finally:
            conn.close()
    assert staged == _rows_of(result)
    assert malformed == [(n + 1,) for n in bad] and stage.counts.get("malformed", 0) == len(bad)


@pytest.mark.parametrize("compression", ["bz2", "gzip"])
@pytest.mark.parametrize("dump", ["wikidata", "wikipedia"])
@settings(max_examples=examples(10))
@given(data=st.data())
def test_truncated_compressed_dump_fails_clearly(data, dump, compression):
    """A compressed dump cut anywhere is a clear error naming the file and saying it is truncated."""
    from kb.sources.dumps import read_wikidata
    from kb.sources.staging import connect_staging
    from kb.sources.wikidata import WIKIDATA_SCHEMA, WikidataOptions
    from kb.sources.wikipedia import STAGING_SCHEMA, SiteInfo, read_dump
    from tests.kb.sources.dump_fixtures import NAMESPACES, wikidata_lines, wikipedia_xml

    plain = b"\n".join(wikidata_lines(malformed=False)) + b"\n" if dump == "wikidata" else wikipedia_xml("en")
    packed = bz2.compress(plain) if compression == "bz2" else gzip.compress(plain, mtime=0)
    cut = packed[: data.draw(st.integers(0, len(packed) - 1), label="cut at")]
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / f"dump.{compression}", cut)
        chunk_bytes = data.draw(st.sampled_from([1 << 20, 500]), label="chunk bytes")
        schema = WIKIDATA_SCHEMA if dump == "wikidata" else STAGING_SCHEMA
        conn = connect_staging(Path(tmp) / "staging.sqlite", schema)
        try:
            with pytest.raises(InputFormatError, match=re.escape(str(path)) + ": .*truncated"):
                if dump == "wikidata":
                    read_wikidata(
                        path,
                        conn,
                        WikidataOptions(_WD_LANGS),
                        workers=1,
                        chunk_bytes=chunk_bytes,
                        progress=lambda n: None,
                    )
                else:
                    info = SiteInfo("enwiki", "en", {v: k for k, v in NAMESPACES["en"].items()})
                    read_dump(
                        path,
                        conn,
                        info,
                        Path(tmp) / "raw.jsonl.gz",
                        workers=1,
                        chunk_bytes=chunk_bytes,
                        progress=lambda n: None,
                    )
        finally:
            conn.close()


# -- the Wikipedia XML dump --

_WP_MUTATIONS = ["truncate", "drop field", "field type", "garbage", "bad utf-8", "unescaped markup", "duplicate"]
_WP_FIELDS = {
    "title": rb"<title>.*?</title>",
    "ns": rb"<ns>.*?</ns>",
    "id": rb"<id>.*?</id>",
    "revision": rb"<revision>.*?</revision>",
    "text": rb"<text[^>]*>.*?</text>",
    "redirect": rb"<redirect[^>]*/>",
}
_WP_TYPES = {
    "ns": [b"<ns>abc</ns>", b"<ns>0.0</ns>", b"<ns><b>0</b></ns>"],
    "id": [b"<id>x1</id>", b"<id>1.5</id>", b"<id>-</id>", b"<id>0x1</id>"],
    "title": [b"<title><b>x</b></title>"],
}


def _pages(xml: bytes) -> tuple[bytes, list[bytes], bytes]:
    """The head (``<siteinfo>``), each ``<page>...</page>`` with the line end before it, and the tail."""
    starts = [m.start() for m in re.finditer(rb"\n  <page>", xml)]
    ends = [m.end() for m in re.finditer(rb"</page>", xml)]
    return xml[: starts[0]], [xml[a:b] for a, b in zip(starts, ends)], xml[ends[-1] :]


def _read_result(res) -> dict:
    """What a ReadResult holds, comparable and mergeable."""
    lines = gzip.decompress(res.member).splitlines() if res.member else []
    counts = {k: v for k, v in res.counts.items() if k != "end_of_dump"}
    # a report for each bad page: why, and where: the page's first bytes (compared without them, as those of a
    # page cut short run on into what follows it)
    assert len(res.malformed) == min(5, counts.get("malformed_pages", 0))
    where = re.compile(r" in <page> starting b['\"]<page>")
    assert all(where.search(m) for m in res.malformed), res.malformed
    malformed = [where.split(m)[0] for m in res.malformed]
    return {
        "pages": res.pages,
        "redirects": res.redirects,
        "links": Counter({(s, t): n for s, t, n in res.links}),
        "member": [orjson.loads(x) for x in lines],
        "counts": Counter(counts),
        "malformed": malformed,
    }


@pytest.mark.parametrize("kind", _WP_MUTATIONS)
@settings(max_examples=examples(12))
@given(data=st.data(), lang=st.sampled_from(["en", "ja", "ar"]), chunk_bytes=st.sampled_from([1 << 20, 700, 200]))
def test_wikipedia_bad_page_is_reported_and_the_others_kept(data, lang, kind, chunk_bytes):
    from kb.sources.staging import connect_staging
    from kb.sources.wikipedia import STAGING_SCHEMA, SiteInfo, read_dump, read_pages
    from tests.kb.sources.dump_fixtures import NAMESPACES, wikipedia_xml

    namespaces = {v: k for k, v in NAMESPACES[lang].items()}
    head, pages, tail = _pages(wikipedia_xml(lang))
    i = data.draw(st.integers(0, len(pages) - 1), label="page")
    page = pages[i]
    inside = (page.index(b"<page>") + 6, page.index(b"</page>"))  # the page's content
    mutated = list(pages)
    if kind == "duplicate":
        mutated.insert(i, page)
    elif kind == "truncate":  # cut before its </page>
        mutated[i] = page[: data.draw(st.integers(*inside), label="cut at")]
    elif kind in ("drop field", "field type"):
        names = (
            [n for n, rx in _WP_FIELDS.items() if re.search(rx, page, re.DOTALL)]
            if kind == "drop field"
            else list(_WP_TYPES)
        )
        name = data.draw(st.sampled_from(names), label="field")
        new = b"" if kind == "drop field" else data.draw(st.sampled_from(_WP_TYPES[name]))
        mutated[i] = re.sub(_WP_FIELDS[name], lambda m: new, page, count=1, flags=re.DOTALL)
    else:
        junk = {"garbage": GARBAGE, "bad utf-8": BAD_UTF8, "unescaped markup": st.sampled_from([b"<", b"&", b"</x>"])}
        at = data.draw(st.integers(*inside), label="at")
        mutated[i] = page[:at] + data.draw(junk[kind], label="bytes") + page[at:]
    xml = head + b"".join(mutated) + tail
    whole = _read_result(read_pages(xml, lang, namespaces))
    parts = [_read_result(read_pages(p, lang, namespaces)) for p in mutated]
    originals = {p: _read_result(read_pages(p, lang, namespaces)) for p in pages}
    for k, p in enumerate(mutated):  # every other page reads as it did
        if k != i:
            assert parts[k] == originals[p] and not parts[k]["malformed"]
    merged = {key: [x for part in parts for x in part[key]] for key in ("pages", "redirects", "member", "malformed")}
    merged["links"] = sum((part["links"] for part in parts), Counter())
    merged["counts"] = sum((part["counts"] for part in parts), Counter())
    assert whole == merged  # no page takes or loses another's records
    own = parts[i]
    if kind in ("truncate", "unescaped markup", "bad utf-8") or (kind == "field type" and name == "id"):
        assert own["counts"]["malformed_pages"] == 1 and not own["pages"] and not own["member"]
    # the build's reader, cutting the dump into chunks of pages: the same counts, pages and reports
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "wiki.xml", xml)
        conn = connect_staging(Path(tmp) / "wiki.sqlite", STAGING_SCHEMA)
        try:
            stage = read_dump(
                path,
                conn,
                SiteInfo(f"{lang}wiki", lang, namespaces),
                Path(tmp) / "raw.jsonl.gz",
                workers=1,
                chunk_bytes=chunk_bytes,
                progress=lambda n: None,
            )
            malformed = [m for (m,) in conn.execute("SELECT message FROM malformed ORDER BY rowid")]
            staged_pages = conn.execute("SELECT title, page_id FROM s_pages ORDER BY rowid").fetchall()
        finally:
            conn.close()
        member = [orjson.loads(x) for x in gzip.decompress((Path(tmp) / "raw.jsonl.gz").read_bytes()).splitlines()]
    counts = Counter({k: v for k, v in stage.counts.items() if k != "end_of_dump"})
    assert (
        counts == whole["counts"]
        and [re.split(r" in <page> starting b['\"]<page>", m)[0] for m in malformed] == whole["malformed"]
    )
    assert staged_pages == whole["pages"] and member == whole["member"]
