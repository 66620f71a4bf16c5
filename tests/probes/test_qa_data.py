"""Extractive QA readers (SQuAD 1.1 layout): SQuAD, XQuAD and MLQA files written by hand, every kind of bad
record counted where it is while the good records around it are kept, fatal file errors, and the writer."""

from __future__ import annotations

import json

import pytest

from kb.errors import InputFormatError, OptionError
from probes.transfer.readers.qa import (
    QaExample,
    mlqa_path,
    read_mlqa,
    read_squad,
    read_xquad,
    write_squad,
)


def _write(path, data) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _qa(ident, question, *answers):
    return {"id": ident, "question": question, "answers": [{"answer_start": s, "text": t} for s, t in answers]}


def _file(*articles):
    return {
        "version": "1.1",
        "data": [
            {"title": title, "paragraphs": [{"context": c, "qas": qas} for c, qas in paras]}
            for title, paras in articles
        ],
    }


PARIS = "Paris is the capital and most populous city of France."
SEINE = "The Seine flows through Paris into the English Channel."
NORMANS = "The Normans were the people who gave their name to Normandy, a region in France."


def test_squad_file_with_two_articles_and_several_answers(tmp_path):
    path = tmp_path / "train-v1.1.json"
    _write(
        path,
        _file(
            (
                "Paris",
                [
                    (
                        PARIS,
                        [
                            _qa("p1", "What is the capital of France?", (0, "Paris"), (0, "Paris")),
                            _qa(
                                "p2",
                                "Which country?",
                                (PARIS.index("France"), "France"),
                                (PARIS.index("France"), "France."),
                            ),
                        ],
                    ),
                    (
                        SEINE,
                        [
                            _qa(
                                "s1",
                                "Where does the Seine flow?",
                                (SEINE.index("the English"), "the English Channel"),
                                (SEINE.index("English"), "English Channel"),
                            )
                        ],
                    ),
                ],
            ),
            ("Normans", [(NORMANS, [_qa("n1", "What region?", (NORMANS.index("Normandy"), "Normandy"))])]),
        ),
    )
    data = read_squad(path, lang="en")
    assert len(data) == 4 and data.path == str(path) and data.skipped == {} and data.examples_skipped == []
    assert [e.id for e in data] == ["p1", "p2", "s1", "n1"]
    first = data.examples[0]
    assert first == QaExample(
        "p1", "What is the capital of France?", PARIS, ((0, "Paris"), (0, "Paris")), "Paris", "en"
    )
    assert first.question_lang == "en" and first.answer_texts == ["Paris", "Paris"]  # repeats kept, in file order
    assert data.examples[1].answer_texts == ["France", "France."]
    assert (
        data.examples[2].answer_texts == ["the English Channel", "English Channel"]
        and data.examples[2].title == "Paris"
    )
    assert data.examples[3].title == "Normans" and data.examples[3].context == NORMANS
    for example in data:
        for start, text in example.answers:
            assert example.context[start : start + len(text)] == text
    assert "4 questions" in repr(data)


def test_xquad_folder_offsets_are_characters(tmp_path):
    de = "Die Hauptstadt von Österreich ist Wien."
    zh = "维也纳是奥地利的首都。"
    _write(
        tmp_path / "xquad.de.json",
        _file(("Wien", [(de, [_qa("x1", "Was ist die Hauptstadt Österreichs?", (de.index("Wien"), "Wien"))])])),
    )
    _write(
        tmp_path / "xquad.zh.json",
        _file(
            (
                "维也纳",
                [
                    (
                        zh,
                        [
                            _qa("x1", "奥地利的首都是哪里？", (0, "维也纳")),
                            _qa("x2", "维也纳是哪个国家的首都？", (4, "奥地利")),
                        ],
                    )
                ],
            )
        ),
    )
    sets = read_xquad(tmp_path, ["de", "zh"])
    assert list(sets) == ["de", "zh"]
    assert [(e.id, e.lang, e.question_lang, e.answer_texts) for e in sets["de"]] == [("x1", "de", "de", ["Wien"])]
    assert sets["de"].examples[0].answers == ((34, "Wien"),)  # "Ö" is one character, two UTF-8 bytes
    assert [e.answers for e in sets["zh"]] == [((0, "维也纳"),), ((4, "奥地利"),)]
    assert sets["zh"].examples[1].title == "维也纳"
    with pytest.raises(InputFormatError, match=r"xquad\.ru\.json: no such file"):
        read_xquad(tmp_path, ["de", "ru"])
    with pytest.raises(OptionError):
        read_xquad(tmp_path, [])


def test_mlqa_pair_languages_and_answer_at_the_end(tmp_path):
    ar = "عاصمة مصر هي القاهرة"
    _write(
        tmp_path / "dev-context-ar-question-en.json",
        _file(("القاهرة", [(ar, [_qa("m1", "What is the capital of Egypt?", (ar.index("القاهرة"), "القاهرة"))])])),
    )
    assert mlqa_path(tmp_path, "ar", "en") == tmp_path / "dev-context-ar-question-en.json"
    assert mlqa_path(tmp_path, "ar", "en", "test") == tmp_path / "test-context-ar-question-en.json"
    data = read_mlqa(tmp_path, "ar", "en")
    (example,) = data.examples
    assert (example.id, example.lang, example.question_lang) == ("m1", "ar", "en")
    start, text = example.answers[0]
    assert start + len(text) == len(ar) and example.context[start:] == "القاهرة"  # the very end of the context
    with pytest.raises(InputFormatError, match="test-context-ar-question-en.json"):
        read_mlqa(tmp_path, "ar", "en", split="test")
    with pytest.raises(OptionError, match="split"):
        mlqa_path(tmp_path, "ar", "en", "train")


def test_bad_records_are_counted_where_they_are_and_good_ones_kept(tmp_path):
    path = tmp_path / "bad.json"
    good = _qa("g1", "What is the capital?", (0, "Paris"))
    data = {
        "version": "1.1",
        "data": [
            "not an article",  # article 0
            {"title": "no paragraphs", "paragraphs": {"context": PARIS}},  # article 1
            {
                "title": "Paris",
                "paragraphs": [
                    {"qas": [_qa("c1", "?", (0, "Paris"))]},  # article 2 paragraph 0
                    {"context": SEINE, "qas": {"id": "q"}},  # article 2 paragraph 1
                    {
                        "context": PARIS,
                        "qas": [
                            good,
                            {
                                "question": "No id?",
                                "answers": [{"answer_start": 0, "text": "Paris"}],
                            },  # paragraph 2 question 1
                            {"id": "noq", "answers": [{"answer_start": 0, "text": "Paris"}]},
                            _qa("none", "Unanswered?"),
                            _qa("wrong", "Wrong offset?", (3, "Paris")),
                            _qa("mixed", "Some good, some bad?", (1, "Paris"), (0, "Paris"), (0, "Pariss")),
                            {
                                "id": "strstart",
                                "question": "String start?",
                                "answers": [{"answer_start": "0", "text": "Paris"}],
                            },
                            {"id": "empty", "question": "Empty text?", "answers": [{"answer_start": 0, "text": ""}]},
                            {
                                "id": "notlist",
                                "question": "Answers a dict?",
                                "answers": {"answer_start": 0, "text": "Paris"},
                            },
                            _qa("g1", "Again?", (0, "Paris")),
                            _qa("g2", "Which country?", (PARIS.index("France"), "France")),
                        ],
                    },
                ],
            },
        ],
    }
    _write(path, data)
    read = read_squad(path)
    assert [(e.id, e.answers) for e in read] == [
        ("g1", ((0, "Paris"),)),
        ("mixed", ((0, "Paris"),)),
        ("g2", ((PARIS.index("France"), "France"),)),
    ]
    assert read.examples[0].question == "What is the capital?"  # the first of a repeated id
    assert read.skipped == {
        "article not an object": 1,
        "paragraphs not a list": 1,
        "paragraph without a string context": 1,
        "qas not a list": 1,
        "question without id or question text": 2,
        "no answers": 1,
        "answer text not at answer_start": 1,
        "answer dropped (text not at answer_start)": 2,
        "answer_start not an int": 1,
        "answer text missing or empty": 1,
        "answers not a list": 1,
        "duplicate question id": 1,
    }
    expected = [
        "[article 0]: article not an object (str)",
        "[article 1]: paragraphs not a list (dict)",
        "[article 2 paragraph 0]: paragraph without a string context",
        "[article 2 paragraph 1]: qas not a list (dict)",
        "[article 2 paragraph 2 question 1]: question without id or question text (no id)",
        "[question noq]: question without id or question text (no question text)",
        "[question none]: no answers",
        "[question wrong]: answer text not at answer_start",
        "[question mixed]: answer dropped (text not at answer_start)",
        "[question mixed]: answer dropped (text not at answer_start)",
        "[question strstart]: answer_start not an int",
        "[question empty]: answer text missing or empty",
        "[question notlist]: answers not a list (dict)",
        "[question g1]: duplicate question id (the first is kept)",
    ]
    assert read.examples_skipped == [f"{path} {e}" for e in expected]
    # without require_answers the unanswered question is kept, with no answers
    lenient = read_squad(path, require_answers=False)
    assert [e.id for e in lenient] == ["g1", "none", "mixed", "g2"]
    assert lenient.examples[1].answers == () and lenient.examples[1].answer_texts == []
    assert "no answers" not in lenient.skipped


def test_require_answers_false_reads_a_file_without_gold(tmp_path):
    path = tmp_path / "test.json"
    _write(
        path, _file(("t", [(PARIS, [{"id": "u1", "question": "What is the capital?"}, _qa("u2", "Which country?")])]))
    )
    with pytest.raises(InputFormatError, match=r"no questions with answers found .*no answers: 2"):
        read_squad(path)
    data = read_squad(path, lang="fr", require_answers=False)
    assert [(e.id, e.answers, e.lang) for e in data] == [("u1", (), "fr"), ("u2", (), "fr")]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ('{"version": "1.1", "data": [', "not JSON"),
        ('{"version": "1.1"}', "no 'data' key"),
        ('{"data": {"title": "x"}}', "'data' is dict"),
        ('[{"title": "x"}]', "top level is a JSON list"),
        ('{"data": []}', r"no questions with answers found \(empty file\?\)"),
        (
            json.dumps(_file(("x", [("abc", [_qa("a", "?", (1, "x"))])]))),
            "no questions with answers found .*answer text not at",
        ),
    ],
)
def test_fatal_file_errors_name_the_file(tmp_path, content, message):
    path = tmp_path / "squad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError, match=message) as info:
        read_squad(path)
    assert str(path) in str(info.value)


def test_bytes_that_are_not_utf8_and_a_bom(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(
        json.dumps(_file(("t", [("Café", [_qa("c", "?", (0, "Café"))])])), ensure_ascii=False).encode("latin-1")
    )
    with pytest.raises(InputFormatError, match="not UTF-8"):
        read_squad(path)
    path.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps(_file(("t", [("Café", [_qa("c", "?", (0, "Café"))])])), ensure_ascii=False).encode("utf-8")
    )
    assert read_squad(path).examples[0].answer_texts == ["Café"]


def test_write_then_read_round_trip(tmp_path):
    zh = "维也纳是奥地利的首都。"
    examples = [
        QaExample("a1", "What is the capital of France?", PARIS, ((0, "Paris"), (0, "Paris")), "Paris", "en"),
        QaExample("a2", "Which country?", PARIS, ((PARIS.index("France"), "France"),), "Paris", "en"),
        QaExample(
            "a3", "Where does it flow?", SEINE, ((SEINE.index("the English"), "the English Channel"),), "Paris", "en"
        ),
        QaExample("b1", "奥地利的首都是哪里？", zh, ((0, "维也纳"),), "维也纳", "en"),
        QaExample("b2", "Unanswered?", NORMANS, (), "", "en"),
    ]
    path = tmp_path / "out" / "squad.json"
    write_squad(examples, path)
    written = json.loads(path.read_text(encoding="utf-8"))
    assert [a["title"] for a in written["data"]] == ["Paris", "维也纳", ""]
    assert [len(a["paragraphs"]) for a in written["data"]] == [2, 1, 1]
    assert "维也纳" in path.read_text(encoding="utf-8")  # written as characters, not \u escapes
    read = read_squad(path, lang="en", require_answers=False)
    assert read.examples == examples and read.skipped == {}
    from kb.errors import OutputExistsError

    with pytest.raises(OutputExistsError):
        write_squad(examples, path)
    write_squad(examples[:1], path, overwrite=True)
    assert [e.id for e in read_squad(path)] == ["a1"]


def test_write_refuses_what_cannot_be_read_back(tmp_path):
    path = tmp_path / "squad.json"
    with pytest.raises(OptionError, match="not at its answer_start"):
        write_squad([QaExample("a", "?", PARIS, ((1, "Paris"),))], path)
    with pytest.raises(OptionError, match="already written"):
        write_squad([QaExample("a", "?", PARIS, ((0, "Paris"),)), QaExample("a", "??", PARIS, ())], path)
    assert not path.exists()


def test_question_lang_defaults_to_lang():
    assert QaExample("a", "?", "c", (), lang="de").question_lang == "de"
    assert QaExample("a", "?", "c", (), lang="ar", question_lang="en").question_lang == "en"
    assert QaExample("a", "?", "c", ()).question_lang is None
