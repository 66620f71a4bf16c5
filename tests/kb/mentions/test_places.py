"""A place written with its region or country narrows its candidates (kb.mentions.places)."""

import pytest

from kb.mentions import MentionIndex
from kb.mentions.places import PlaceContext


@pytest.fixture(scope="module")
def index(embedded_db):
    return MentionIndex.for_db(embedded_db, languages=["en", "de", "fr", "ja"])


def _top(embedded_db, index, text, lang, surface):
    found = PlaceContext(embedded_db).narrow(text, index.detect(text, lang), lang)
    [m] = [m for m in found if m.surface == surface]
    assert sum(c.prior for c in m.candidates) == pytest.approx(1.0)
    return embedded_db.titles(m.candidates[0].key)["en"], len(m.candidates)


@pytest.mark.parametrize(
    "lang,text,surface,title",
    [
        ("en", "The team plays in London, Ontario, tonight.", "London", "London (Canada)"),
        ("en", "The team plays in London, Ontario, tonight.", "Ontario", "Ontario (Canada)"),
        ("en", "She studied in Cambridge, Massachusetts.", "Cambridge", "Cambridge (United States)"),
        ("en", "The festival returns to Athens, Georgia.", "Athens", "Athens (United States)"),
        ("en", "The festival returns to Athens, Georgia.", "Georgia", "Georgia (United States)"),
        ("de", "Sie wohnt in Valencia, Spanien.", "Valencia", "Valencia (Spain)"),
        ("fr", "Un séisme a frappé Córdoba, en Espagne.", "Córdoba", "Córdoba (Spain)"),
        ("ja", "カナダのロンドンで試合が行われた。", "ロンドン", "London (Canada)"),
    ],
)
def test_the_region_or_country_picks_the_place(embedded_db, index, lang, text, surface, title):
    assert _top(embedded_db, index, text, lang, surface) == (title, 1)


def test_other_neighbours_leave_candidates_alone(embedded_db, index):
    # a list of places, a country after a country, a city beside a country it is not in
    for text, surface in [
        ("We visited Cambridge, London and Paris.", "Cambridge"),
        ("Germany, France and Spain agreed.", "Germany"),
        ("They flew from London, then to Japan.", "London"),
        ("London (Japan) is not a place.", "London"),
    ]:
        found = index.detect(text, "en")
        narrowed = PlaceContext(embedded_db).narrow(text, found, "en")
        assert narrowed == found, (text, surface)


def test_pairs_read_the_gap(embedded_db, index):
    ctx = PlaceContext(embedded_db)
    text = "Valencia, en Espagne. Valencia, Nous Espagne."
    assert ctx.pairs(text, index.detect(text, "fr"), "fr") == [(0, 1)]  # "Nous" is no short lowercase word


@pytest.mark.parametrize(
    "text,surface,title,left",
    [
        # a city narrowed by a region named further off in its sentence
        ("The team will return to London for an exhibition game in England.", "London", "London", 1),
        # a region kept because it contains a place of the same sentence
        ("The governor of Georgia spoke in Atlanta, United States.", "Georgia", "Georgia (United States)", 1),
        # a country named beside another is no container of it: both Georgias stay, the country first
        ("Georgia and the United States signed a deal.", "Georgia", "Georgia", 2),
        # another sentence does not count
        ("Atlanta is hot. The governor of Georgia resigned.", "Georgia", "Georgia", 2),
        # a city several candidates could be settles nothing
        ("We visited Cambridge, London and Paris.", "London", "London", 2),
    ],
)
def test_the_sentence_settles_what_a_single_candidate_leaves_no_doubt_about(
    embedded_db, index, text, surface, title, left
):
    assert _top(embedded_db, index, text, "en", surface) == (title, left)
