"""The news-text linking set and its scorer (probes.news_linking_data, benchmarks/news_linking.py)."""

import pytest

from kb.mentions.linkability import LONGER_NAME
from mluke.linking.linker import Linker
from mluke.results import LinkedMention
from probes.news_linking_data import (
    DEV,
    FIFTH_TEST,
    FOURTH_TEST,
    KINDS,
    TEST,
    THIRD_TEST,
    NewsCase,
    gold_key,
    news_summary,
    score_news,
)


def test_the_held_out_set_is_big_enough_and_apart_from_dev(embedded_db):
    assert len(TEST) >= 150
    assert {c.lang for c in TEST} >= {"en", "de", "fr", "es", "ja", "zh", "ru"}
    assert {c.kind for c in TEST} == set(KINDS)
    assert not {c.text for c in TEST} & {c.text for c in DEV}
    for case in TEST + DEV:
        a, b = case.span()
        assert case.text[a:b] == case.surface
        assert (gold_key(embedded_db, case) is None) == (case.kind == "unlinked")


#: The later held-out sets, each with the sets written before it, its least size and least unlinked cases.
LATER_SETS = {
    "third": (THIRD_TEST, TEST + DEV, 160, 55),
    "fourth": (FOURTH_TEST, THIRD_TEST + TEST + DEV, 150, 70),
    "fifth": (FIFTH_TEST, FOURTH_TEST + THIRD_TEST + TEST + DEV, 150, 75),
}


@pytest.mark.parametrize("name", LATER_SETS)
def test_each_later_held_out_set_is_big_enough_and_apart_from_the_earlier_ones(embedded_db, name):
    cases, earlier, size, unlinked = LATER_SETS[name]
    assert len(cases) >= size and sum(c.kind == "unlinked" for c in cases) >= unlinked
    assert {(c.lang, c.kind) for c in cases} == {
        (lang, kind) for lang in ("en", "de", "fr", "es", "ja", "zh", "ru") for kind in KINDS
    }
    assert not {c.text for c in cases} & {c.text for c in earlier}
    for case in cases:
        a, b = case.span()
        assert case.text[a:b] == case.surface
        assert (gold_key(embedded_db, case) is None) == (case.kind == "unlinked")


def _mention(start, end, surface, key):
    return LinkedMention(start, end, surface, key, None, None, 0.9 if key else 0.0, 0.0, 1.0, 0.9, key is None)


class _FakeLinker:
    """Returns crafted mentions: the scorer's verdicts are known by construction."""

    def __init__(self, db, answers):
        self.db = db
        self.answers = answers

    def link(self, texts, lang, **options):
        return [self.answers[t] for t in texts]


def test_scorer_judges_spans_keys_and_nil(embedded_db):
    london = gold_key(embedded_db, NewsCase("en", "start", "x", "x", "London"))
    canada = gold_key(embedded_db, NewsCase("en", "start", "x", "x", "London (Canada)"))
    cases = [
        NewsCase("en", "start", "London is big.", "London", "London"),
        NewsCase("en", "place", "In London, Ontario.", "London", "London (Canada)"),
        NewsCase("en", "unlinked", "Jack London wrote.", "London"),
        NewsCase("en", "unlinked", "Paris Hilton sang.", "Paris"),
        NewsCase("en", "start", "London Bridge fell.", "London", "London"),
    ]
    answers = {
        "London is big.": [_mention(0, 6, "London", london)],  # right
        "In London, Ontario.": [_mention(3, 9, "London", london)],  # wrong city
        "Jack London wrote.": [_mention(5, 11, "London", None)],  # NIL: right
        "Paris Hilton sang.": [_mention(0, 12, "Paris Hilton", canada)],  # an overlapping link: wrong
        "London Bridge fell.": [_mention(0, 13, "London Bridge", london)],  # not the case's span: wrong
    }
    results = score_news(_FakeLinker(embedded_db, answers), cases)
    assert [r.right for r in results] == [True, False, True, False, False]
    summary = news_summary(results)
    assert summary["start"]["all"] == {"cases": 2, "right": 1, "share": 50.0}
    assert summary["unlinked"]["en"] == {"cases": 2, "right": 1, "share": 50.0}


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    return Linker(tiny_demo, embedded_db, languages=["en", "ja", "de", "fr"])


@pytest.mark.parametrize(
    "case",
    [
        NewsCase("en", "place", "The team plays in London, Ontario.", "London", "London (Canada)"),
        NewsCase("en", "place", "She studied in Cambridge, Massachusetts.", "Cambridge", "Cambridge (United States)"),
        NewsCase("de", "place", "Sie wohnt in Valencia, Spanien.", "Valencia", "Valencia (Spain)"),
        NewsCase("ja", "place", "カナダのロンドンで試合が行われた。", "ロンドン", "London (Canada)"),
        NewsCase("en", "start", "London is the capital of the United Kingdom.", "London", "London"),
    ],
)
def test_key_sentences_rank_the_gold_entity_first(linker, embedded_db, case):
    """Prior-level decisions on the tiny demo: the region or country leaves one candidate, whatever the model
    learnt; NIL is off so that only the ranking is checked."""
    [m] = [m for m in linker.link(case.text, lang=case.lang, nil_threshold=0.0) if (m.start, m.end) == case.span()]
    assert m.key == gold_key(embedded_db, case)
    if case.kind == "start":
        assert m.link_probability >= 0.9


@pytest.mark.parametrize(
    "lang,text,surface",
    [
        ("en", "Michael Jordan said he would return.", "Jordan"),
        ("en", "Chad Smith played drums.", "Chad"),
        ("en", "The French president met the press.", "French"),
        ("de", "Die Essen in Essen waren gut.", "Essen"),
        ("ja", "チャド・スミスがドラムを叩いた。", "チャド"),
    ],
)
def test_key_common_words_stay_unlinked(linker, lang, text, surface):
    """Link probability at most 0.1 makes a mention NIL at the default threshold (0.15) whatever the model says."""
    first = next(m for m in linker.link(text, lang=lang) if m.surface == surface)
    assert first.link_probability <= LONGER_NAME and first.nil
