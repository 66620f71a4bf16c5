"""Generate realistic synthetic dumps for the dump benchmarks (never committed: they go
under benchmarks/work/).

- Wikidata ``latest-all.json`` layout: a JSON array, one item per line ending with
  ``,``; items with labels, descriptions and aliases in many languages, sitelinks
  (Wikipedias and sister projects), claims of several datatypes with qualifiers and
  references, ``lastrevid``/``modified``: about 14 KB per line, like real items.
  The first lines are properties (``"type":"property"``).
- Wikipedia ``pages-articles.xml`` layout for one language: ``<siteinfo>`` with
  localized namespaces, then pages of about 11 KB of wikitext with links (piped,
  sections, trails, lower-case first letters), templates (nested, infoboxes),
  tables, references, comments, ``<math>``, ``<nowiki>``, files, categories,
  interlanguage links, and redirect pages. Link targets are the titles of the
  generated Wikidata items' sitelinks, so a build maps them to entities.

    python benchmarks/dump_generate.py wikidata --items 200000 -o benchmarks/work/wd.json
    python benchmarks/dump_generate.py wikipedia --pages 20000 --lang en -o benchmarks/work/enwiki.xml

``--smoke`` (no kind, no ``-o``): a Wikidata dump of 20 items and Wikipedia dumps of 10 pages in en and ja, into a
temporary folder.
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from pathlib import Path

from common import add_smoke, smoke_folder
from vocab_cold_start import SYLLABLES

from kb import MLUKE_LANGUAGES

LANGS = list(MLUKE_LANGUAGES)
OTHER_LANGS = [
    "ca",
    "cs",
    "da",
    "eo",
    "et",
    "eu",
    "fa",
    "gl",
    "he",
    "hr",
    "hu",
    "hy",
    "ka",
    "kk",
    "la",
    "lt",
    "lv",
    "ms",
    "nn",
    "no",
    "ro",
    "sk",
    "sl",
    "sq",
    "sr",
    "uk",
    "ur",
    "uz",
    "be",
    "bg",
    "az",
    "ceb",
    "cy",
    "ga",
    "is",
    "mk",
    "mn",
    "ne",
    "si",
    "ta",
    "ml",
    "mr",
    "gu",
    "pa",
    "kn",
    "ast",
    "bs",
    "lb",
    "tl",
    "war",
]
SISTER_SITES = ("commonswiki", "specieswiki", "enwikiquote", "dewikisource", "frwikivoyage", "metawiki")
SCRIPTS = SYLLABLES  # syllables per script, shared with the vocabulary benchmark
ITEM_PROPERTIES = (
    "P17",
    "P19",
    "P20",
    "P27",
    "P30",
    "P31",
    "P36",
    "P37",
    "P39",
    "P69",
    "P101",
    "P103",
    "P106",
    "P108",
    "P131",
    "P136",
    "P138",
    "P140",
    "P159",
    "P176",
    "P178",
    "P190",
    "P264",
    "P279",
    "P361",
    "P364",
    "P407",
    "P413",
    "P449",
    "P463",
    "P495",
    "P527",
    "P530",
    "P740",
    "P937",
    "P1001",
    "P1303",
    "P1376",
    "P1412",
)
OTHER_PROPERTIES = {
    "P569": "time",
    "P625": "globe-coordinate",
    "P1082": "quantity",
    "P214": "external-id",
    "P227": "external-id",
    "P646": "external-id",
    "P1448": "monolingualtext",
    "P856": "url",
    "P18": "commonsMedia",
    "P373": "string",
}


def _word(rng: random.Random, lang: str) -> str:
    pieces = SCRIPTS.get(lang, SCRIPTS["latin"])
    w = "".join(rng.choice(pieces) for _ in range(rng.randint(2, 4)))
    return w.capitalize() if pieces is SCRIPTS["latin"] else w


def _name(rng: random.Random, lang: str, words: int) -> str:
    sep = "" if lang in ("ja", "zh", "th") else " "
    return sep.join(_word(rng, lang) for _ in range(words))


def item_title(qid: int, lang: str) -> str:
    """The (deterministic) Wikipedia title of item ``Q<qid>`` in ``lang``."""
    rng = random.Random(qid * 1000 + LANGS.index(lang) if lang in LANGS else qid)
    return f"{_name(rng, lang, rng.randint(1, 2))} {qid}"


def has_sitelink(qid: int, lang: str) -> bool:
    rng = random.Random(qid * 7919 + sum(map(ord, lang)))
    popular = lang in ("en", "de", "fr", "es", "ja", "ru", "it", "zh", "pt", "nl", "pl", "sv")
    return rng.random() < (0.8 if popular else 0.45)


def _snak(rng: random.Random, pid: str, datatype: str, n_items: int) -> dict:
    h = f"{rng.getrandbits(160):040x}"
    if datatype == "wikibase-item":
        q = rng.randint(1, n_items)
        value = {"value": {"entity-type": "item", "numeric-id": q, "id": f"Q{q}"}, "type": "wikibase-entityid"}
    elif datatype == "time":
        value = {
            "value": {
                "time": f"+{rng.randint(1000, 2024)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T00:00:00Z",
                "timezone": 0,
                "before": 0,
                "after": 0,
                "precision": 11,
                "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
            },
            "type": "time",
        }
    elif datatype == "quantity":
        value = {"value": {"amount": f"+{rng.randint(1, 10**7)}", "unit": "1"}, "type": "quantity"}
    elif datatype == "globe-coordinate":
        value = {
            "value": {
                "latitude": rng.uniform(-90, 90),
                "longitude": rng.uniform(-180, 180),
                "altitude": None,
                "precision": 0.0001,
                "globe": "http://www.wikidata.org/entity/Q2",
            },
            "type": "globecoordinate",
        }
    elif datatype == "monolingualtext":
        value = {"value": {"text": _name(rng, "en", 2), "language": "en"}, "type": "monolingualtext"}
    else:
        value = {"value": f"{rng.randint(10**6, 10**9)}", "type": "string"}
    return {"snaktype": "value", "property": pid, "hash": h, "datavalue": value, "datatype": datatype}


def _statement(rng: random.Random, qid: int, pid: str, datatype: str, n_items: int) -> dict:
    st = {
        "mainsnak": _snak(rng, pid, datatype, n_items),
        "type": "statement",
        "id": f"Q{qid}${str(uuid.UUID(int=rng.getrandbits(128))).upper()}",
        "rank": rng.choice(("normal", "normal", "normal", "preferred", "deprecated")),
    }
    if rng.random() < 0.3:
        st["qualifiers"] = {"P580": [_snak(rng, "P580", "time", n_items)]}
        st["qualifiers-order"] = ["P580"]
    refs = []
    for _ in range(rng.choice((0, 1, 1))):
        refs.append(
            {
                "hash": f"{rng.getrandbits(160):040x}",
                "snaks": {
                    "P248": [_snak(rng, "P248", "wikibase-item", n_items)],
                    "P813": [_snak(rng, "P813", "time", n_items)],
                    "P854": [_snak(rng, "P854", "url", n_items)],
                },
                "snaks-order": ["P248", "P813", "P854"],
            }
        )
    if refs:
        st["references"] = refs
    return st


def make_item(qid: int, n_items: int, rng: random.Random) -> dict:
    """One Wikidata item in the dump's JSON layout."""
    langs = [l for l in LANGS if rng.random() < 0.6] + [l for l in OTHER_LANGS if rng.random() < 0.35]
    labels = {l: {"language": l, "value": _name(rng, l, rng.randint(1, 3))} for l in langs}
    descriptions = {l: {"language": l, "value": _name(rng, l, rng.randint(3, 8))} for l in langs if rng.random() < 0.8}
    aliases = {
        l: [{"language": l, "value": _name(rng, l, rng.randint(1, 3))} for _ in range(rng.randint(1, 3))]
        for l in langs
        if rng.random() < 0.3
    }
    claims: dict[str, list] = {}
    for pid in rng.sample(ITEM_PROPERTIES, rng.randint(2, 7)):
        claims[pid] = [_statement(rng, qid, pid, "wikibase-item", n_items) for _ in range(rng.choice((1, 1, 1, 2)))]
    for pid, dt in rng.sample(sorted(OTHER_PROPERTIES.items()), rng.randint(1, 4)):
        claims[pid] = [_statement(rng, qid, pid, dt, n_items) for _ in range(rng.choice((1, 1, 2)))]
    if rng.random() < 0.05:  # somevalue / novalue snaks exist in real dumps
        claims.setdefault("P36", []).append(
            {
                "mainsnak": {"snaktype": "somevalue", "property": "P36", "datatype": "wikibase-item"},
                "type": "statement",
                "rank": "normal",
                "id": f"Q{qid}$x",
            }
        )
    sitelinks = {}
    for l in LANGS:
        if has_sitelink(qid, l):
            site = f"{l}wiki"
            sitelinks[site] = {"site": site, "title": item_title(qid, l), "badges": []}
    for l in OTHER_LANGS:
        if rng.random() < 0.3:
            sitelinks[f"{l}wiki"] = {"site": f"{l}wiki", "title": _name(rng, l, 2), "badges": []}
    for site in SISTER_SITES:
        if rng.random() < 0.15:
            sitelinks[site] = {"site": site, "title": _name(rng, "en", 2), "badges": []}
    return {
        "type": "item",
        "id": f"Q{qid}",
        "labels": labels,
        "descriptions": descriptions,
        "aliases": aliases,
        "claims": claims,
        "sitelinks": sitelinks,
        "pageid": qid + 100,
        "ns": 0,
        "title": f"Q{qid}",
        "lastrevid": rng.randint(10**8, 2 * 10**9),
        "modified": "2024-05-01T12:00:00Z",
    }


def make_property(pid: str, datatype: str, rng: random.Random) -> dict:
    labels = {l: {"language": l, "value": _name(rng, l, 2)} for l in LANGS + OTHER_LANGS[:10]}
    return {
        "type": "property",
        "datatype": datatype,
        "id": pid,
        "labels": labels,
        "descriptions": {"en": {"language": "en", "value": "a property"}},
        "aliases": {},
        "claims": {},
        "pageid": 1,
        "ns": 120,
        "title": f"Property:{pid}",
        "lastrevid": 1,
        "modified": "2024-05-01T12:00:00Z",
    }


def write_wikidata(path: Path, n_items: int, seed: int = 0) -> int:
    """Write ``n_items`` items (plus the properties) as a Wikidata JSON dump; return bytes written."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        f.write("[\n")
        for pid in ITEM_PROPERTIES:
            f.write(
                json.dumps(make_property(pid, "wikibase-item", rng), ensure_ascii=False, separators=(",", ":")) + ",\n"
            )
        for q in range(1, n_items + 1):
            end = ",\n" if q < n_items else "\n"
            f.write(json.dumps(make_item(q, n_items, rng), ensure_ascii=False, separators=(",", ":")) + end)
        f.write("]\n")
    return path.stat().st_size


# -- Wikipedia ----------------------------------------------------------------------------
NAMESPACES_XML = {
    "en": [
        (-2, "Media"),
        (-1, "Special"),
        (0, ""),
        (1, "Talk"),
        (2, "User"),
        (4, "Wikipedia"),
        (6, "File"),
        (10, "Template"),
        (14, "Category"),
        (100, "Portal"),
    ],
    "ja": [
        (-2, "メディア"),
        (-1, "特別"),
        (0, ""),
        (1, "ノート"),
        (2, "利用者"),
        (4, "Wikipedia"),
        (6, "ファイル"),
        (10, "Template"),
        (14, "Category"),
        (100, "Portal"),
    ],
}


def _sentence(rng: random.Random, lang: str, n_items: int, links: list[int]) -> str:
    words = []
    for _ in range(rng.randint(8, 22)):
        r = rng.random()
        if r < 0.1:
            q = rng.randint(1, n_items)
            while not has_sitelink(q, lang):
                q = rng.randint(1, n_items)
            links.append(q)
            t = item_title(q, lang)
            k = rng.random()
            if k < 0.45:
                words.append(f"[[{t}]]")
            elif k < 0.75:
                words.append(f"[[{t}|{_name(rng, lang, rng.randint(1, 2))}]]")
            elif k < 0.82:
                words.append(f"[[{t}#History|{_name(rng, lang, 1)}]]")
            elif k < 0.9 and lang not in ("ja", "zh", "th"):
                words.append(f"[[{t}]]s")
            elif k < 0.95:
                words.append(f"[[{t[0].lower() + t[1:]}]]")
            else:
                words.append(f"[[{t.replace(' ', '_')}|{t}]]")
        elif r < 0.13:
            words.append(f"'''{_word(rng, lang)}'''")
        elif r < 0.15:
            words.append(f"''{_word(rng, lang)}''")
        else:
            words.append(_word(rng, lang).lower() if lang not in SCRIPTS else _word(rng, lang))
    sep = "" if lang in ("ja", "zh", "th") else " "
    text = sep.join(words) + ("。" if lang in ("ja", "zh") else ".")
    if rng.random() < 0.3:
        text += (
            f'<ref name="r{rng.randint(1, 50)}">{{{{cite web |url=https://example.org/{rng.randint(1, 9999)} '
            f"|title={_name(rng, 'en', 3)} |access-date=2020-01-01}}}}</ref>"
        )
    if rng.random() < 0.05:
        text += '<ref name="r1" />'
    return text


def page_text(rng: random.Random, lang: str, n_items: int, target_bytes: int = 11000) -> tuple[str, list[int]]:
    """Wikitext of one article (about ``target_bytes`` bytes) and the items it links to."""
    links: list[int] = []
    parts = [
        "{{Short description|" + _name(rng, "en", 4) + "}}",
        "{{Infobox settlement\n| name = "
        + _name(rng, lang, 2)
        + "\n| image = Example.jpg\n| population = "
        + str(rng.randint(1000, 10**7))
        + "{{citation needed|date=May 2020}}\n| website = {{URL|example.org}}\n}}",
        "<!-- hidden editor comment with [[Not a link]] -->",
    ]
    size = sum(len(p) for p in parts)
    section = 0
    while size < target_bytes:
        r = rng.random()
        if r < 0.08:
            section += 1
            block = f"== {_name(rng, lang, 2)} =="
        elif r < 0.12:
            block = (
                '{| class="wikitable"\n|-\n! Year !! Value\n|-\n| '
                + str(rng.randint(1900, 2020))
                + " || [["
                + item_title(rng.randint(1, n_items), lang)
                + "]]\n|-\n| 2001 || 42\n|}"
            )
        elif r < 0.14:
            block = f"[[File:Example {rng.randint(1, 99)}.jpg|thumb|A caption with a [[{item_title(1, lang)}]] link]]"
        elif r < 0.16:
            block = f"* {_sentence(rng, lang, n_items, links)}\n* {_name(rng, lang, 3)}"
        elif r < 0.17:
            block = "<math>\\sum_{i=1}^{n} x_i^{2} = [[y]]</math> and <nowiki>[[not a link]]</nowiki>."
        else:
            block = " ".join(_sentence(rng, lang, n_items, links) for _ in range(rng.randint(2, 5)))
        parts.append(block)
        size += len(block) + 2
    parts.append("== References ==\n{{Reflist}}")
    parts.append(f"[[Category:{_name(rng, 'en', 2)}]]\n[[Category:{_name(rng, 'en', 1)}]]")
    parts.append("[[de:" + _name(rng, "de", 2) + "]]")
    return "\n\n".join(parts), links


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_wikipedia(
    path: Path, lang: str, n_pages: int, n_items: int, seed: int = 0, redirect_share: float = 0.1
) -> int:
    """Write a ``pages-articles.xml`` with ``n_pages`` pages of ``lang`` (articles of items with a
    sitelink there, plus redirects); return bytes written."""
    rng = random.Random(seed)
    ns = NAMESPACES_XML.get(lang, NAMESPACES_XML["en"])
    with path.open("w", encoding="utf-8") as f:
        f.write(f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="{lang}">\n')
        f.write(
            f"  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <dbname>{lang}wiki</dbname>\n"
            f"    <base>https://{lang}.wikipedia.org/wiki/Main_Page</base>\n    <generator>MediaWiki 1.42</generator>\n"
            "    <case>first-letter</case>\n    <namespaces>\n"
        )
        for key, name in ns:
            if key == 0:
                f.write('      <namespace key="0" case="first-letter" />\n')
            else:
                f.write(f'      <namespace key="{key}" case="first-letter">{name}</namespace>\n')
        f.write("    </namespaces>\n  </siteinfo>\n")
        q = 0
        for pid in range(1, n_pages + 1):
            if rng.random() < redirect_share:
                title = _name(rng, lang, 2) + f" r{pid}"
                target = item_title(max(q, 1), lang)
                body = f"#REDIRECT [[{target}]]"
                redirect = f'    <redirect title="{_esc(target)}" />\n'
            else:
                q += 1
                while not has_sitelink(q, lang):
                    q += 1
                title = item_title(q, lang)
                body, _ = page_text(rng, lang, n_items)
                redirect = ""
            f.write(
                f"  <page>\n    <title>{_esc(title)}</title>\n    <ns>0</ns>\n    <id>{pid}</id>\n{redirect}"
                f"    <revision>\n      <id>{pid * 10}</id>\n      <timestamp>2024-05-01T00:00:00Z</timestamp>\n"
                f"      <contributor><username>Bot</username><id>1</id></contributor>\n"
                f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
                f'      <text bytes="{len(body.encode())}" xml:space="preserve">{_esc(body)}</text>\n'
                f"      <sha1>{f'{rng.getrandbits(124):031x}'}</sha1>\n    </revision>\n  </page>\n"
            )
        f.write("</mediawiki>\n")
    return path.stat().st_size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", nargs="?", choices=("wikidata", "wikipedia"))
    p.add_argument("-o", "--output", type=Path)
    p.add_argument("--items", type=int, default=200_000, help="Wikidata items (also the link target range)")
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--lang", default="en")
    p.add_argument("--seed", type=int, default=0)
    add_smoke(p)
    a = p.parse_args()
    if a.smoke:
        folder = smoke_folder()
        for name, n in [("wd.json", write_wikidata(folder / "wd.json", 20))] + [
            (f"{lang}wiki.xml", write_wikipedia(folder / f"{lang}wiki.xml", lang, 10, 20)) for lang in ("en", "ja")
        ]:
            print(f"wrote {name}: {n / 1e6:.2f} MB")
        return
    if a.kind is None or a.output is None:
        p.error("give the kind of dump (wikidata or wikipedia) and -o/--output (or --smoke)")
    if a.kind == "wikidata":
        n = write_wikidata(a.output, a.items, a.seed)
    else:
        n = write_wikipedia(a.output, a.lang, a.pages, a.items, a.seed)
    print(f"wrote {a.output}: {n / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
