"""The calibration's data sets (issue 28): deterministic, split by (city, language) pair, cities beside a country
that is not theirs, and NIL instances with the country named, with another one and with none."""

import pytest

from mluke.linking.calibration import FEATURES
from probes import linking_calibration_data as data
from probes.linking_calibration import nil_instances


@pytest.fixture(scope="module")
def sets(tiny_demo, embedded_db):
    return data.calibration_sets(tiny_demo, embedded_db)


@pytest.fixture(scope="module")
def countries(embedded_db):
    return set(embedded_db.keys(kind="country"))


def _city(doc, countries):
    [city] = [g for g in doc.mentions if g.key not in countries]
    return city


def test_ordinary_text_is_deterministic_and_seeded(tiny_demo, embedded_db, sets):
    assert tuple(sets) == data.SETS
    again = data.ordinary_text_docs(tiny_demo, embedded_db)
    assert again == {k: sets[k] for k in again}
    other = data.ordinary_text_docs(tiny_demo, embedded_db, seed=1)
    assert [d.text for d in other["unrelated country"]] != [d.text for d in again["unrelated country"]]
    assert set(data.UNRELATED_COUNTRY_TEMPLATES) == set(data.NO_COUNTRY_TEMPLATES)
    assert {"ja", "zh"} <= {d.lang for d in again["unrelated country"]}


def test_unrelated_country_sentences_name_a_country_that_is_not_the_citys(embedded_db, sets, countries):
    docs = sets["unrelated country"]
    assert docs
    for d in docs:
        city = _city(d, countries)
        [country] = [g for g in d.mentions if g.key in countries]
        for g in d.mentions:
            assert d.text[g.start : g.end] == g.surface
        # neither the city's own country nor that of a namesake (what the kb can confuse it with)
        namesakes = {city.key} | {m.key for m in embedded_db.lookup(d.lang, city.surface)}
        related = {f.object for k in namesakes for f in embedded_db.facts(subject=k)}
        assert country.key not in related, d.text
        assert embedded_db.get(country.key).kind == "country"
    for d in sets["no country"]:
        assert len(d.mentions) == 1 and d.mentions[0].key not in countries
        assert embedded_db.get(d.mentions[0].key).kind == "city"


def test_every_set_splits_by_pair_and_no_pair_is_in_both_halves(sets, countries):
    half_of: dict[tuple[str, str], int] = {}
    for name, docs in sets.items():
        fit, held = data.split_halves(docs, countries)
        assert fit and held and len(fit) + len(held) == len(docs), name
        for half, part in enumerate((fit, held)):
            for d in part:
                pair = (_city(d, countries).key, d.lang)
                assert data.pair_half(*pair) == half
                assert half_of.setdefault(pair, half) == half, (name, pair)
    sizes = data.set_sizes(sets["no country"], countries)
    assert sizes["sentences"] == len(sets["no country"]) and sizes["naming a country"] == 0
    assert data.set_sizes(sets["unrelated country"], countries)["naming a country"] == len(sets["unrelated country"])


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db, sets):
    from mluke.linking.linker import Linker

    langs = sorted({d.lang for docs in sets.values() for d in docs})
    return Linker(tiny_demo, embedded_db, languages=langs)


def test_nil_instances_with_and_without_the_country_named(linker, sets):
    """kb coherence is seen both ways: it fires on right links beside an unrelated country and on NIL with a
    country named, and not on NIL whose text names no country."""
    conflict = FEATURES.index("kb_conflict")
    unrelated = nil_instances(linker, sets["unrelated country"], ("combined",))
    alone = nil_instances(linker, sets["no country"], ("combined",))
    cities = [i for i in unrelated if i.truth is not None and i.x[conflict] == 1.0]
    assert cities and all(i.truth == i.top or i.ambiguous for i in cities)
    nil_named = [i for i in unrelated if i.truth is None]
    nil_alone = [i for i in alone if i.truth is None]
    assert nil_named and nil_alone
    assert all(i.x[conflict] == 0.0 for i in alone)
    assert any(i.x[conflict] == 1.0 for i in nil_named)
