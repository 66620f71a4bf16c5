"""The data the linker's confidence (NIL) calibration is fitted and scored on, built from the embedded kb and the
demo model's linking set; deterministic (seeded where it samples).

Four sets of sentences, each mention gold (a city and, where named, a country):

- ``template``: the demo's linking set (:func:`probes.demo_eval.demo_linking_docs`), an ambiguous city and
  its own country in the demo's training patterns;
- ``free``: the same (city, language) pairs in held-out free wording (:func:`free_wording_docs`,
  :data:`FREE_TEMPLATES`), the city's own country named in another clause;
- ``unrelated country``: ordinary text where a city stands beside a country that is *not* its own
  (:data:`UNRELATED_COUNTRY_TEMPLATES`, "We flew from {city} to {country} last week."): these must link, so
  the fit sees right links whose text names a country nothing relates them to;
- ``no country``: the city alone (:data:`NO_COUNTRY_TEMPLATES`, "My cousin moved to {city} last year.").

The last two (:func:`ordinary_text_docs`) hold the linking set's ambiguous (city, language) pairs and, per
language, a seeded sample of unambiguous demo cities. The other country of a sentence is drawn (seeded) among
the demo's countries, never the city's own, a country of one of its namesakes or an object of its kb facts.
:func:`probes.linking_calibration.nil_instances` turns every ambiguous city of these sets into a NIL instance
too (its entity removed from the kb): with its own country named (template, free), with another country named
(unrelated country) and with no country named (no country), so kb coherence (``kb_conflict``) is seen both
ways on right links and on NIL.

:func:`pair_half` splits every set by (city, language) pair, the same way in all of them: no pair is in both
the fit half and the held-out half of any two sets.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kb import open_db
from kb.db import EntityDB

if TYPE_CHECKING:
    from probes.mewsli import LinkDoc

#: Held-out wording: ``{city}`` and ``{country}`` in sentences unlike the kb's relation templates.
FREE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "Last spring my sister spent a week in {city} and came back in love with {country}.",
        "{country} surprised us: the old town of {city} was the highlight of the trip.",
        "My colleague grew up in {city} and still talks about {country} all the time.",
    ),
    "de": (
        "Letzten Sommer war meine Schwester eine Woche in {city} und schwärmt seitdem von {country}.",
        "{country} hat uns überrascht: Die Altstadt von {city} war der schönste Teil der Reise.",
        "Mein Kollege kommt aus {city} und erzählt oft von {country}.",
    ),
    "fr": (
        "L'été dernier, ma sœur a passé une semaine à {city} et elle ne parle plus que de son voyage : {country}.",
        "{country} nous a surpris : la vieille ville de {city} était le meilleur moment du voyage.",
        "Mon collègue a grandi à {city} et il parle souvent de son pays, {country}.",
    ),
    "es": (
        "El verano pasado mi hermana pasó una semana en {city} y volvió enamorada de {country}.",
        "{country} nos sorprendió: el casco antiguo de {city} fue lo mejor del viaje.",
        "Mi compañero creció en {city} y siempre habla de su país, {country}.",
    ),
    "it": (
        "L'estate scorsa mia sorella ha passato una settimana a {city} ed è tornata innamorata del paese: {country}.",
        "{country} ci ha sorpreso: il centro storico di {city} è stato il momento migliore del viaggio.",
        "Il mio collega è cresciuto a {city} e parla spesso del suo paese, {country}.",
    ),
    "pt": (
        "No verão passado a minha irmã passou uma semana em {city} e voltou apaixonada pelo país: {country}.",
        "{country} nos surpreendeu: o centro histórico de {city} foi o melhor da viagem.",
        "O meu colega cresceu em {city} e fala sempre do seu país, {country}.",
    ),
    "nl": (
        "Vorige zomer was mijn zus een week in {city} en sindsdien praat ze alleen nog over {country}.",
        "{country} verraste ons: de oude binnenstad van {city} was het hoogtepunt van de reis.",
        "Mijn collega is opgegroeid in {city} en vertelt vaak over {country}.",
    ),
    "sv": (
        "Förra sommaren var min syster en vecka i {city} och sedan dess pratar hon bara om {country}.",
        "{country} överraskade oss: gamla stan i {city} var resans höjdpunkt.",
        "Min kollega växte upp i {city} och berättar ofta om {country}.",
    ),
    "id": (
        "Musim panas lalu kakak saya menghabiskan seminggu di {city} dan jatuh cinta pada {country}.",
        "{country} membuat kami terkejut: kota tua {city} adalah bagian terbaik dari perjalanan itu.",
        "Rekan kerja saya tumbuh besar di {city} dan sering bercerita tentang {country}.",
    ),
    "vi": (
        "Mùa hè năm ngoái chị tôi ở {city} một tuần và từ đó rất yêu {country}.",
        "{country} làm chúng tôi bất ngờ: phố cổ {city} là điều tuyệt nhất của chuyến đi.",
        "Đồng nghiệp của tôi lớn lên ở {city} và hay kể về {country}.",
    ),
    "ja": (
        "去年の夏、姉は{city}で一週間過ごし、すっかり{country}が好きになった。",
        "{country}には驚かされた。{city}の旧市街が旅の一番の思い出だ。",
        "同僚は{city}で育ち、よく{country}の話をしてくれる。",
    ),
    "zh": (
        "去年夏天，我姐姐在{city}住了一个星期，从此爱上了{country}。",
        "{country}让我们很惊喜：{city}的老城区是这次旅行最美好的回忆。",
        "我的同事在{city}长大，常常给我们讲{country}的事情。",
    ),
}


def free_wording_docs(
    model_dir: str | Path, db: EntityDB | None = None, *, languages: Iterable[str] | None = None
) -> list[LinkDoc]:
    """The (city, language) pairs of the demo's linking set written with :data:`FREE_TEMPLATES` (all three
    templates each), as :class:`probes.mewsli.LinkDoc` objects with both gold mentions; deterministic."""
    from probes.demo_eval import demo_linking_docs
    from probes.mewsli import GoldMention, LinkDoc

    db = open_db(db)
    wanted = set(FREE_TEMPLATES if languages is None else languages) & set(FREE_TEMPLATES)
    pairs: dict[tuple[str, str], str] = {}
    for doc in demo_linking_docs(model_dir):
        if doc.lang in wanted and len(doc.mentions) == 2:
            pairs[(doc.mentions[0].key, doc.lang)] = doc.mentions[1].key
    out = []
    for (city, lang), country in sorted(pairs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        names = db.labels([city, country], lang)
        if city not in names or country not in names:
            continue
        for n, template in enumerate(FREE_TEMPLATES[lang]):
            text, spans = _fill(template, {"city": names[city], "country": names[country]})
            gold = sorted([(*spans["city"], city), (*spans["country"], country)])
            out.append(
                LinkDoc(
                    f"free-{lang}-{city}-{n}",
                    lang,
                    text,
                    tuple(GoldMention(a, b, text[a:b], key) for a, b, key in gold),
                )
            )
    return out


def _fill(template: str, values: dict[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """``template`` with its ``{name}`` slots filled, and the span of each filled slot."""
    text, spans, pos = [], {}, 0
    length = 0
    for m in re.finditer(r"\{(\w+)\}", template):
        text.append(template[pos : m.start()])
        length += m.start() - pos
        value = values[m.group(1)]
        spans[m.group(1)] = (length, length + len(value))
        text.append(value)
        length += len(value)
        pos = m.end()
    text.append(template[pos:])
    return "".join(text), spans


#: Ordinary text, held-out wording: a city beside a country that is not its own (``{city}``, ``{country}``);
#: one template with the city first, one with the country first, per language.
UNRELATED_COUNTRY_TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "We flew from {city} to {country} last week.",
        "This year {country} and {city} were both on our list.",
    ),
    "de": (
        "Letzte Woche sind wir von {city} nach {country} geflogen.",
        "Nach zwei Wochen in {country} haben wir noch ein paar Tage in {city} verbracht.",
    ),
    "fr": (
        "La semaine dernière, nous avons pris l'avion de {city} vers {country}.",
        "Cette année, {country} et {city} étaient tous les deux sur notre liste.",
    ),
    "es": (
        "La semana pasada volamos de {city} a {country}.",
        "Después de dos semanas recorriendo {country}, pasamos unos días en {city}.",
    ),
    "it": (
        "La settimana scorsa abbiamo preso l'aereo da {city} per {country}.",
        "Dopo due settimane in giro per {country}, abbiamo passato qualche giorno a {city}.",
    ),
    "pt": (
        "Na semana passada voámos de {city} para {country}.",
        "Depois de duas semanas a percorrer {country}, passámos alguns dias em {city}.",
    ),
    "nl": (
        "Vorige week vlogen we van {city} naar {country}.",
        "Na twee weken door {country} te reizen, bleven we nog een paar dagen in {city}.",
    ),
    "sv": (
        "Förra veckan flög vi från {city} till {country}.",
        "Efter två veckor i {country} stannade vi några dagar i {city}.",
    ),
    "id": (
        "Minggu lalu kami terbang dari {city} ke {country}.",
        "Setelah dua minggu berkeliling {country}, kami menginap beberapa hari di {city}.",
    ),
    "vi": (
        "Tuần trước chúng tôi bay từ {city} sang {country}.",
        "Sau hai tuần đi khắp {country}, chúng tôi ở lại {city} vài ngày.",
    ),
    "ja": (
        "先週、{city}から{country}へ飛行機で移動した。",
        "{country}を二週間旅したあと、{city}にも数日滞在した。",
    ),
    "zh": (
        "上周我们从{city}飞到了{country}。",
        "在{country}旅行两周之后，我们又在{city}待了几天。",
    ),
}

#: Ordinary text, held-out wording: a city and no country (``{city}``).
NO_COUNTRY_TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": ("We spent three days in {city} and loved the food.", "My cousin moved to {city} last year."),
    "de": (
        "Wir haben drei Tage in {city} verbracht und das Essen geliebt.",
        "Mein Cousin ist letztes Jahr nach {city} gezogen.",
    ),
    "fr": (
        "Nous avons passé trois jours à {city} et la cuisine nous a beaucoup plu.",
        "Mon cousin a déménagé à {city} l'année dernière.",
    ),
    "es": ("Pasamos tres días en {city} y nos encantó la comida.", "Mi primo se mudó a {city} el año pasado."),
    "it": (
        "Abbiamo passato tre giorni a {city} e il cibo ci è piaciuto molto.",
        "Mio cugino si è trasferito a {city} l'anno scorso.",
    ),
    "pt": ("Passámos três dias em {city} e adorámos a comida.", "O meu primo mudou-se para {city} no ano passado."),
    "nl": (
        "We waren drie dagen in {city} en vonden het eten heerlijk.",
        "Mijn neef is vorig jaar naar {city} verhuisd.",
    ),
    "sv": ("Vi tillbringade tre dagar i {city} och älskade maten.", "Min kusin flyttade till {city} förra året."),
    "id": (
        "Kami menghabiskan tiga hari di {city} dan sangat menyukai makanannya.",
        "Sepupu saya pindah ke {city} tahun lalu.",
    ),
    "vi": ("Chúng tôi đã ở {city} ba ngày và rất thích đồ ăn ở đó.", "Anh họ tôi chuyển đến {city} vào năm ngoái."),
    "ja": ("{city}で三日間過ごし、料理がとても気に入った。", "いとこは去年{city}に引っ越した。"),
    "zh": ("我们在{city}待了三天，非常喜欢那里的美食。", "我表哥去年搬到了{city}。"),
}

#: Names of the calibration sets, in report order.
SETS = ("template", "free", "unrelated country", "no country")


def pair_half(city: str, lang: str) -> int:
    """The half of the (city, language) pair: 0 = fit, 1 = held out (CRC-32 parity of ``lang:city``: the same
    in every set and every run, whatever else a set holds)."""
    return zlib.crc32(f"{lang}:{city}".encode()) % 2


def split_halves(docs: Iterable[LinkDoc], countries: Iterable[str]) -> tuple[list[LinkDoc], list[LinkDoc]]:
    """``docs`` (:class:`probes.mewsli.LinkDoc` objects) as (fit half, held-out half) by :func:`pair_half` of their
    city (the first gold mention that is not one of ``countries``; else the first)."""
    known = set(countries)
    halves: tuple[list[LinkDoc], list[LinkDoc]] = ([], [])
    for d in docs:
        city = next((g.key for g in d.mentions if g.key not in known), d.mentions[0].key)
        halves[pair_half(city, d.lang)].append(d)
    return halves


def _demo_entities(model_dir: str | Path) -> set[str]:
    """The entities of the demo model's facts (trained or held out): the ones its vocabulary holds."""
    import json

    info = json.loads((Path(model_dir) / "demo.json").read_text(encoding="utf-8"))
    return {k for f in [*info.get("train", []), *info.get("heldout", [])] for k in (f["subject"], f["object"])}


def ordinary_text_docs(
    model_dir: str | Path,
    db: EntityDB | None = None,
    *,
    unambiguous_per_language: int = 15,
    seed: int = 0,
    languages: Iterable[str] | None = None,
) -> dict[str, list[LinkDoc]]:
    """The ``unrelated country`` and ``no country`` sets (module docs) as :class:`probes.mewsli.LinkDoc` objects,
    every template of :data:`UNRELATED_COUNTRY_TEMPLATES` / :data:`NO_COUNTRY_TEMPLATES` for each (city,
    language) pair: the linking set's pairs and ``unambiguous_per_language`` demo cities per language whose
    label names no other kb entity there (seeded by ``seed``)."""
    from probes.demo_eval import demo_linking_docs
    from probes.mewsli import GoldMention, LinkDoc

    db = open_db(db)
    wanted = sorted(set(UNRELATED_COUNTRY_TEMPLATES if languages is None else languages) & set(NO_COUNTRY_TEMPLATES))
    demo = _demo_entities(model_dir)
    countries = sorted(k for k in db.keys(kind="country") if k in demo)
    demo_cities = sorted(k for k in db.keys(kind="city") if k in demo)
    linked = {(d.mentions[0].key, d.lang) for d in demo_linking_docs(model_dir) if len(d.mentions) == 2}
    out: dict[str, list[LinkDoc]] = {"unrelated country": [], "no country": []}
    for lang in wanted:
        city_names = db.labels(demo_cities, lang)
        country_names = db.labels(countries, lang)
        sample = sorted(c for c in city_names if (c, lang) not in linked and _sole_entity(db, lang, city_names[c]))
        rng = random.Random(f"ordinary-{seed}-{lang}")
        chosen = rng.sample(sample, min(unambiguous_per_language, len(sample)))
        pairs = sorted({c for c, lg in linked if lg == lang and c in city_names} | set(chosen))
        for city in pairs:
            name = city_names[city]
            related = _related_countries(db, lang, city, name)
            others = [c for c in country_names if c not in related]
            for n, template in enumerate(UNRELATED_COUNTRY_TEMPLATES[lang]):
                country = rng.choice(others)
                text, spans = _fill(template, {"city": name, "country": country_names[country]})
                gold = sorted([(*spans["city"], city), (*spans["country"], country)])
                mentions = tuple(GoldMention(a, b, text[a:b], key) for a, b, key in gold)
                out["unrelated country"].append(LinkDoc(f"unrelated-{lang}-{city}-{n}", lang, text, mentions))
            for n, template in enumerate(NO_COUNTRY_TEMPLATES[lang]):
                text, spans = _fill(template, {"city": name})
                a, b = spans["city"]
                out["no country"].append(
                    LinkDoc(f"no-country-{lang}-{city}-{n}", lang, text, (GoldMention(a, b, name, city),))
                )
    return out


def _sole_entity(db: EntityDB, lang: str, name: str) -> bool:
    """Whether ``name`` names one kb entity only in ``lang`` (titles, labels, aliases)."""
    return len(db.lookup(lang, name)) == 1


def _related_countries(db: EntityDB, lang: str, city: str, name: str) -> set[str]:
    """The countries a sentence about ``city`` must not name as an unrelated one: the objects of its facts
    and of the facts of every entity its ``name`` can be in ``lang`` (its namesakes)."""
    keys = {city} | {m.key for m in db.lookup(lang, name)}
    return keys | {f.object for k in keys for f in db.facts(subject=k)}


def calibration_sets(model_dir: str | Path, db: EntityDB | None = None, *, seed: int = 0) -> dict[str, list[LinkDoc]]:
    """All of :data:`SETS` for the demo model in ``model_dir`` (module docs), before the split into halves."""
    from probes.demo_eval import demo_linking_docs

    db = open_db(db)
    return {
        "template": demo_linking_docs(model_dir),
        "free": free_wording_docs(model_dir, db),
        **ordinary_text_docs(model_dir, db, seed=seed),
    }


def set_sizes(docs: Sequence[LinkDoc], countries: Iterable[str]) -> dict[str, int]:
    """Composition of one set: sentences, (city, language) pairs, languages, sentences naming a country."""
    known = set(countries)
    pairs = {(next((g.key for g in d.mentions if g.key not in known), d.mentions[0].key), d.lang) for d in docs}
    return {
        "sentences": len(docs),
        "pairs": len(pairs),
        "languages": len({d.lang for d in docs}),
        "naming a country": sum(any(g.key in known for g in d.mentions) for d in docs),
    }
