import unicodedata

import pytest

import kb
from kb.embedded import RELATIONS, load_relations

JAPAN, TOKYO, ASIA = "geonames:1861060", "geonames:1850147", "geonames:6255147"


def test_every_language_has_names_facts_and_templates(embedded_db):
    stats = embedded_db.stats["languages"]
    assert sorted(stats) == sorted(kb.MLUKE_LANGUAGES)
    for lang, counts in stats.items():
        assert counts["templates"] == len(RELATIONS), lang
        # every country, continent, language and currency is named by CLDR in all 24 languages
        assert counts["labels"] >= 1000, (lang, counts)
        assert counts["facts"] >= 2000, (lang, counts)
    countries = list(embedded_db.keys("country"))
    assert len(countries) >= 240
    for lang in kb.MLUKE_LANGUAGES:
        named = embedded_db.labels(countries, lang)
        assert len(named) >= 240, lang


def test_facts_of_japan(embedded_db):
    assert embedded_db.entity(JAPAN).labels["ja"] == "日本"
    assert embedded_db.objects(JAPAN, "P36") == [TOKYO]
    assert embedded_db.objects(TOKYO, "P1376") == [JAPAN]
    assert embedded_db.objects(TOKYO, "P17") == [JAPAN]
    assert embedded_db.objects(JAPAN, "P30") == [ASIA]
    assert embedded_db.objects(JAPAN, "P37") == ["iso639:ja"]
    assert embedded_db.objects(JAPAN, "P38") == ["iso4217:JPY"]
    assert embedded_db.label("iso4217:JPY", "ja") == "日本円"
    assert embedded_db.label(TOKYO, "th") == "โตเกียว"
    assert embedded_db.label(ASIA, "ar") == "آسيا"
    assert embedded_db.lookup("ja", "東京")[0].key == TOKYO


def test_relations_are_consistent(embedded_db):
    borders = {(f.subject, f.object) for f in embedded_db.facts(property="P47")}
    assert len(borders) > 300
    assert all((o, s) in borders for s, o in borders)  # shares border with is symmetric
    capitals = {(f.subject, f.object) for f in embedded_db.facts(property="P36")}
    capital_of = {(f.object, f.subject) for f in embedded_db.facts(property="P1376")}
    assert capitals == capital_of and len(capitals) > 200
    for prop in RELATIONS:
        assert embedded_db.facts(property=prop), prop
        assert embedded_db.property_label(prop, "en")
    switzerland = embedded_db.lookup("en", "Switzerland")[0].key
    assert {embedded_db.label(o, "en") for o in embedded_db.objects(switzerland, "P37")} >= {"German", "French", "Italian"}


def test_ambiguous_city_names_get_unique_titles(embedded_db):
    valencia = embedded_db.lookup("en", "Valencia")
    assert len(valencia) >= 2
    countries = {embedded_db.label(embedded_db.objects(m.key, "P17")[0], "en") for m in valencia}
    assert {"Spain", "Venezuela"} <= countries
    titles = [embedded_db.titles(m.key)["en"] for m in valencia]
    assert len(set(titles)) == len(titles)
    assert any(t.startswith("Valencia (") for t in titles)
    assert len(embedded_db.lookup("en", "London")) >= 2
    assert len(embedded_db.lookup("en", "Hyderabad")) >= 2


def test_keys_are_source_prefixed_and_stable(embedded_db):
    keys = list(embedded_db.keys())
    assert all(k.split(":")[0] in {"geonames", "iso639", "iso4217"} for k in keys)
    assert JAPAN in keys and TOKYO in keys


def _script_ok(lang: str, text: str) -> bool:
    names = {unicodedata.name(c, "") for c in text if c.isalpha()}
    expect = {"ar": "ARABIC", "bn": "BENGALI", "el": "GREEK", "hi": "DEVANAGARI", "ja": "CJK", "ko": "HANGUL",
              "ru": "CYRILLIC", "te": "TELUGU", "th": "THAI", "zh": "CJK"}.get(lang, "LATIN")
    return any(expect in n for n in names)


def test_relation_templates_cover_all_languages_in_their_script():
    relations = load_relations()
    assert set(RELATIONS) <= set(relations)
    for pid in RELATIONS:
        for lang in kb.MLUKE_LANGUAGES:
            text = relations[pid]["templates"][lang]
            kb.parse_template(text, where=f"{pid}/{lang}")
            assert _script_ok(lang, text), (pid, lang, text)
            assert relations[pid]["labels"][lang].strip()


def test_default_db_builds_once_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MLUKE_HOME", str(tmp_path))
    calls = []
    real = kb.embedded.build_embedded

    def counting(path, **kw):
        calls.append(path)
        return real(path, languages=("en", "ja"), **{k: v for k, v in kw.items() if k != "languages"})

    monkeypatch.setattr(kb.embedded, "build_embedded", counting)
    db = kb.default_db()
    assert db.path.parent == tmp_path and db.languages == ("en", "ja")
    kb.default_db()
    assert len(calls) == 1


def test_unknown_language_is_refused(tmp_path):
    with pytest.raises(kb.UnknownLanguageError, match="'xx'"):
        kb.build_embedded(tmp_path / "e.sqlite", languages=["en", "xx"])
    assert not (tmp_path / "e.sqlite").exists()
