"""Hand-written fixtures in the exact formats of the real dumps (written into tmp_path by tests).

Wikidata: ``latest-all.json`` (a JSON array, one entity per line, lines end with
``,``). Wikipedia: ``pages-articles.xml`` (MediaWiki export 0.10 with
``<siteinfo>``). The content covers: non-Latin titles, right-to-left text, an
emoji outside the BMP, sister-project sitelinks, deprecated/somevalue claims,
empty maps written as ``[]``, a malformed line, redirects to redirects, a
redirect loop, links into other namespaces, links to missing pages, templates,
tables, references, comments, ``<nowiki>``, ``<math>`` and broken markup.
"""

from __future__ import annotations

import bz2
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any


def _labels(**by_lang: str) -> dict[str, Any]:
    return {lang.replace("_", "-"): {"language": lang.replace("_", "-"), "value": v} for lang, v in by_lang.items()}


def _sitelinks(**by_site: str) -> dict[str, Any]:
    return {site: {"site": site, "title": t, "badges": []} for site, t in by_site.items()}


def _claim(pid: str, qid: str | None, rank: str = "normal", snaktype: str = "value") -> dict[str, Any]:
    snak: dict[str, Any] = {"snaktype": snaktype, "property": pid, "hash": "0" * 40, "datatype": "wikibase-item"}
    if qid is not None and snaktype == "value":
        snak["datavalue"] = {
            "value": {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid},
            "type": "wikibase-entityid",
        }
    return {
        "mainsnak": snak,
        "type": "statement",
        "id": f"X${pid}",
        "rank": rank,
        "references": [
            {
                "hash": "1" * 40,
                "snaks": {
                    "P248": [
                        {
                            "snaktype": "value",
                            "property": "P248",
                            "datavalue": {
                                "value": {"entity-type": "item", "numeric-id": 36578, "id": "Q36578"},
                                "type": "wikibase-entityid",
                            },
                            "datatype": "wikibase-item",
                        }
                    ]
                },
                "snaks-order": ["P248"],
            }
        ],
    }


def _item(
    qid: str, labels: dict, sitelinks: dict, claims: dict | list | None = None, aliases: dict | list | None = None
) -> dict[str, Any]:
    return {
        "type": "item",
        "id": qid,
        "labels": labels,
        "descriptions": {"en": {"language": "en", "value": "a test item"}},
        "aliases": aliases if aliases is not None else {},
        "claims": claims if claims is not None else {},
        "sitelinks": sitelinks,
        "pageid": int(qid[1:]) + 1,
        "ns": 0,
        "title": qid,
        "lastrevid": 1,
        "modified": "2024-01-01T00:00:00Z",
    }


def wikidata_entities() -> list[dict[str, Any]]:
    """The entities of the fixture dump, in dump order."""
    return [
        {
            "type": "property",
            "datatype": "wikibase-item",
            "id": "P36",
            "labels": _labels(en="capital", ja="首都"),
            "descriptions": {},
            "aliases": {},
            "claims": {},
            "pageid": 1,
            "ns": 120,
            "title": "Property:P36",
            "lastrevid": 1,
            "modified": "2024-01-01T00:00:00Z",
        },
        {
            "type": "property",
            "datatype": "external-id",
            "id": "P214",
            "labels": _labels(en="VIAF ID"),
            "descriptions": {},
            "aliases": [],
            "claims": [],
            "pageid": 2,
            "ns": 120,
            "title": "Property:P214",
            "lastrevid": 1,
            "modified": "2024-01-01T00:00:00Z",
        },
        _item(
            "Q17",
            _labels(en="Japan", ja="日本", ar="اليابان", fr="Japon"),
            _sitelinks(
                enwiki="Japan",
                jawiki="日本",
                arwiki="اليابان",
                frwiki="Japon",
                commonswiki="Category:Japan",
                enwikiquote="Japan",
                specieswiki="Japan",
                enwikivoyage="Japan",
            ),
            claims={
                "P36": [_claim("P36", "Q1490"), _claim("P36", "Q999", rank="deprecated")],
                "P37": [_claim("P37", "Q5287")],
                "P30": [_claim("P30", None, snaktype="somevalue")],
                "P31": [_claim("P31", "Q6256")],  # Q6256 is not in the dump: the fact is dropped
                "P1082": [
                    {
                        "mainsnak": {
                            "snaktype": "value",
                            "property": "P1082",
                            "datatype": "quantity",
                            "datavalue": {"value": {"amount": "+125000000", "unit": "1"}, "type": "quantity"},
                        },
                        "type": "statement",
                        "rank": "normal",
                    }
                ],
            },
            aliases={
                "en": [{"language": "en", "value": "Nippon"}, {"language": "en", "value": "Nihon"}],
                "de": [{"language": "de", "value": "Nippon"}],
            },
        ),
        _item(
            "Q1490",
            _labels(en="Tokyo", ja="東京"),
            _sitelinks(enwiki="Tokyo", jawiki="東京都"),
            claims={"P17": [_claim("P17", "Q17")]},
            aliases=[],
        ),
        _item("Q5287", _labels(en="Japanese", ja="日本語"), _sitelinks(enwiki="Japanese language", jawiki="日本語")),
        _item("Q85", _labels(ar="القاهرة", en="Cairo"), _sitelinks(arwiki="القاهرة", enwiki="Cairo")),
        _item(
            "Q2",
            _labels(en="Face with Tears of Joy 😂"),
            _sitelinks(enwiki="Face with Tears of Joy 😂"),
            claims={"P36": [_claim("P36", "Q1490")]},
        ),
        _item(
            "Q200",
            _labels(en="Only on Commons", de="Nur Commons"),
            _sitelinks(commonswiki="Only on Commons", dewiki="Nur Commons"),
        ),
        _item("Q300", _labels(en="No links at all"), []),
    ]


MALFORMED_LINE = b'{"type":"item","id":"Q400","labels":{"en":{"language":"en","value":"Broken'


def wikidata_lines(malformed: bool = True) -> list[bytes]:
    """The dump's lines (without line ends): ``[``, entities with ``,``, ``]``."""
    ents = [json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode("utf-8") for e in wikidata_entities()]
    if malformed:
        ents.insert(5, MALFORMED_LINE)  # dump line 7
    return [b"["] + [e + b"," for e in ents[:-1]] + [ents[-1], b"]"]


def write_wikidata(path: Path, *, malformed: bool = True, compression: str = "none") -> Path:
    data = b"\n".join(wikidata_lines(malformed)) + b"\n"
    if compression == "bz2":
        data = bz2.compress(data)
    elif compression == "gzip":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


NAMESPACES = {
    "en": {
        -2: "Media",
        -1: "Special",
        1: "Talk",
        2: "User",
        4: "Wikipedia",
        6: "File",
        10: "Template",
        14: "Category",
        100: "Portal",
    },
    "ja": {
        -2: "メディア",
        -1: "特別",
        1: "ノート",
        2: "利用者",
        4: "Wikipedia",
        6: "ファイル",
        10: "Template",
        14: "Category",
        100: "Portal",
    },
    "ar": {-2: "ميديا", -1: "خاص", 1: "نقاش", 2: "مستخدم", 4: "ويكيبيديا", 6: "ملف", 10: "قالب", 14: "تصنيف"},
}

EN_JAPAN = """{{Short description|Country in East Asia}}
{{Infobox country
| capital = [[Tokyo]]
| flag = {{flagicon|JPN}}
}}
<!-- editors: do not link [[Tokyo]] here -->
'''Japan''' is an island country. Its capital is [[Tokyo]], and [[tokyo|the capital]] is large.
People speak [[Japanese language|Japanese]]. The [[Japan]]ese islands; see [[Tokyo#History|history of Tokyo]].
Also called [[Nippon]].<ref>[[Tokyo]] source {{cite web|url=http://x.org}}</ref> Broken: [[Loop A]], [[Missing page]].
[[File:Flag of Japan.svg|thumb|The [[Tokyo]] flag]]
{| class="wikitable"
|-
| [[Tokyo]] || 13 million
|}
== Culture ==
* Tokyo Tower, and more of Tokyo.
See [[Wikipedia:About|about]] and [[:Category:Japan]] and <nowiki>[[Tokyo]]</nowiki> and <math>[[x]]</math>.
[[Category:Countries]]
[[fr:Japon]]
{{unclosed template [[Cairo]] and a stray ]] and [[ unclosed link
"""
EN_TOKYO = """'''Tokyo''' is the capital of [[Japan]]. Tokyo is big. [[Face with Tears of Joy 😂|😂]] is an emoji.
[[Tokyo Tower]] is in Tokyo. Japanese is spoken."""
EN_EMOJI = "The '''😂''' emoji. It is not [[Japan]] but it is popular in Japan &amp; Tokyo."
JA_JAPAN = """'''日本'''（にほん）は[[東京都|東京]]を首都とする。[[ファイル:Flag.png|thumb|[[東京都]]の旗]]
[[日本語]]が話される。東京は大きい。{{Cite book|title=本}}<ref name="a">[[東京都]]</ref>
[[Category:日本]]"""
AR_JAPAN = "'''اليابان''' بلد. عاصمتها [[طوكيو]] وليس [[القاهرة]]. القاهرة مدينة."
AR_CAIRO = "'''القاهرة''' عاصمة مصر. [[اليابان|اليابان]] بعيدة."

#: Pages per language: (title, ns, text, redirect target or None).
PAGES: dict[str, list[tuple[str, int, str, str | None]]] = {
    "en": [
        ("Japan", 0, EN_JAPAN, None),
        ("Tokyo", 0, EN_TOKYO, None),
        ("Nippon", 0, "#REDIRECT [[State of Japan]]", "State of Japan"),
        ("State of Japan", 0, "#REDIRECT [[Japan]]", "Japan"),
        ("Loop A", 0, "#REDIRECT [[Loop B]]", "Loop B"),
        ("Loop B", 0, "#REDIRECT [[Loop A]]", "Loop A"),
        ("Category:Countries", 14, "Countries. [[Japan]]", None),
        ("Face with Tears of Joy 😂", 0, EN_EMOJI, None),
        ("Japanese language", 0, "[[Japan]] uses it.", None),
        ("Cairo", 0, "Cairo is not in [[Japan]].", None),
    ],
    "ja": [
        ("日本", 0, JA_JAPAN, None),
        ("東京都", 0, "'''東京都'''は[[日本]]の首都。", None),
        ("東京", 0, "#転送 [[東京都]]", "東京都"),
        ("日本語", 0, "[[日本]]の言語。", None),
    ],
    "ar": [
        ("اليابان", 0, AR_JAPAN, None),
        ("القاهرة", 0, AR_CAIRO, None),
    ],
}


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def wikipedia_xml(lang: str, pages: list[tuple[str, int, str, str | None]] | None = None) -> bytes:
    """A ``pages-articles.xml`` of ``lang`` in the MediaWiki export format."""
    out = [
        (
            f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" '
            f'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.10" xml:lang="{lang}">'
        ),
        "  <siteinfo>",
        "    <sitename>Wikipedia</sitename>",
        f"    <dbname>{lang}wiki</dbname>",
        f"    <base>https://{lang}.wikipedia.org/wiki/Main_Page</base>",
        "    <generator>MediaWiki 1.42.0</generator>",
        "    <case>first-letter</case>",
        "    <namespaces>",
    ]
    for key, name in sorted({**NAMESPACES[lang], 0: ""}.items()):
        out.append(
            f'      <namespace key="{key}" case="first-letter" />'
            if key == 0
            else f'      <namespace key="{key}" case="first-letter">{_esc(name)}</namespace>'
        )
    out += ["    </namespaces>", "  </siteinfo>"]
    for i, (title, ns, text, redirect) in enumerate(pages if pages is not None else PAGES[lang], 1):
        out += ["  <page>", f"    <title>{_esc(title)}</title>", f"    <ns>{ns}</ns>", f"    <id>{i}</id>"]
        if redirect is not None:
            out.append(f'    <redirect title="{_esc(redirect)}" />')
        out += [
            "    <revision>",
            f"      <id>{i * 100}</id>",
            f"      <parentid>{i * 100 - 1}</parentid>",
            "      <timestamp>2024-01-01T00:00:00Z</timestamp>",
            "      <contributor>",
            "        <username>Editor</username>",
            "        <id>7</id>",
            "      </contributor>",
            "      <model>wikitext</model>",
            "      <format>text/x-wiki</format>",
            f'      <text bytes="{len(text.encode())}" sha1="abc" xml:space="preserve">{_esc(text)}</text>',
            "      <sha1>abc</sha1>",
            "    </revision>",
            "  </page>",
        ]
    out.append("</mediawiki>")
    return ("\n".join(out) + "\n").encode("utf-8")


def write_wikipedia(
    path: Path, lang: str, *, compression: str = "none", pages: list[tuple[str, int, str, str | None]] | None = None
) -> Path:
    data = wikipedia_xml(lang, pages)
    if compression == "bz2":
        data = bz2.compress(data)
    path.write_bytes(data)
    return path


def db_rows(path: Path, skip: tuple[str, ...] = ()) -> dict[str, list[tuple]]:
    """Every row of every table but ``skip`` (meta without the creation time), sorted: for comparing builds."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {}
        for t in tables:
            if t in skip:
                continue
            rows = conn.execute(f"SELECT * FROM {t}").fetchall()
            if t == "meta":
                rows = [r for r in rows if r[0] != "created"]
            out[t] = sorted(rows, key=repr)
        return out
    finally:
        conn.close()
