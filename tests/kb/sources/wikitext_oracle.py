"""A test-only oracle for :mod:`kb.sources.wikitext`, and a seeded generator of real-looking pages.

:func:`oracle_links` reads a page with ``mwparserfromhell`` (a full wikitext parser,
independent of ours) and lists the article links a reader sees, in order, as
``(target title, anchor)``. What counts as *kept* is what ``parse_wikitext`` claims
to keep (its module docs), decided on mwparserfromhell's tree:

- kept: links in prose, headings, list items, bold/italic, and inside HTML tags whose
  content is shown (``<span>``, ``<div>``, ``<small>``, ``<blockquote>``...);
- not kept: links inside templates, parser functions and template arguments (not
  expanded), comments, tables (``{| ... |}``, also indented by ``:``), tags whose
  content we drop (:data:`kb.sources.wiki_markup.DROPPED_TAGS`: ``<ref>``, ``<gallery>``,
  ``<math>``, ``<pre>``, ``<code>``...), ``<nowiki>``, and the captions of file links;
- article links only: file, category and interlanguage links are hidden; links into
  other namespaces, inter-wiki links, ``[[:fr:X]]`` and section links ``[[#s]]`` are
  text, not article links.

Anchor: the rendered label (the title as written for ``[[T]]``, MediaWiki's pipe trick
for ``[[T (x)|]]``) plus the link trail, the letters of MediaWiki's ``$linkTrail`` for
the language (``languages/messages/Messages{Xx}.php``) read right after ``]]``, as
MediaWiki renders it. Target: the title without its section, ``_`` as a space, runs
of spaces collapsed, first letter upper-case. Whitespace in anchors is compared
collapsed.

One workaround for mwparserfromhell 0.7: it does not see a table after ``:``
indentation (``:{|``), which MediaWiki renders as an indented table; the oracle drops
the colons before parsing (that changes which links are in a table, not their text).
"""

from __future__ import annotations

import html
import random
import re

import mwparserfromhell
from mwparserfromhell.nodes import Argument, Comment, ExternalLink, Heading, HTMLEntity, Tag, Template, Text, Wikilink

from kb.sources.wiki_links import LinkRules
from kb.sources.wiki_markup import DROPPED_TAGS
from kb.sources.wikitext import parse_wikitext

# -- MediaWiki's facts for the five languages of the pages ---------------------------------
_AR_MARKS = "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
#: $linkTrail of MessagesEn/De/Ru/Ar.php; MessagesJa.php has none, so English's.
MEDIAWIKI_TRAILS = {
    "en": re.compile("[a-z]+"),
    "de": re.compile("[äöüßa-z]+"),
    "ru": re.compile("[a-zабвгдеёжзийклмнопрстуфхцчшщъыьэюя]+"),
    "ar": re.compile(f"[a-zء-يچ{_AR_MARKS}]+"),
    "ja": re.compile("[a-z]+"),
}
#: Local namespace names, as a dump's <siteinfo> gives them (lower-case name -> number).
SITE_NAMESPACES = {
    "en": {},
    "de": {"datei": 6, "bild": 6, "kategorie": 14, "hilfe": 12, "vorlage": 10},
    "ru": {"файл": 6, "изображение": 6, "категория": 14, "справка": 12, "шаблон": 10},
    "ar": {"ملف": 6, "صورة": 6, "تصنيف": 14, "مساعدة": 12, "قالب": 10},
    "ja": {"ファイル": 6, "画像": 6, "カテゴリ": 14, "ヘルプ": 12, "テンプレート": 10},
}
_HIDDEN_EN = {"file", "image", "media", "category"}
_OTHER_EN = {"help", "wikipedia", "template", "user", "portal", "talk", "special", "project"}
_LANG_PREFIXES = {"en", "de", "fr", "ru", "ar", "ja", "es", "it", "zh", "pt"}
_INTERWIKI = {"wikt", "wiktionary", "commons", "s", "d", "b", "voy"}


def rules_for(lang: str) -> LinkRules:
    """Our parser's rules for a page of ``lang`` (the namespaces its dump's siteinfo would list)."""
    return LinkRules(lang, SITE_NAMESPACES[lang])


def _norm_title(t: str) -> str:
    t = " ".join(t.replace("_", " ").split())
    return t[:1].upper() + t[1:] if t[:1].upper() and len(t[:1].upper()) == 1 else t


def _classify(title: str, lang: str) -> tuple[str, str]:
    """("article", target), ("text", "") or ("hidden", "") for a link title."""
    t = html.unescape(title).strip()
    colon = t.startswith(":")
    if colon:
        t = t[1:].strip()
    if not t or t.startswith("#"):
        return "text", ""
    if ":" in t:
        prefix = " ".join(t.split(":", 1)[0].replace("_", " ").split()).lower()
        hidden = _HIDDEN_EN | {k for k, v in SITE_NAMESPACES[lang].items() if v in (6, 14)}
        other = _OTHER_EN | {k for k, v in SITE_NAMESPACES[lang].items() if v not in (6, 14)}
        if prefix in hidden or prefix in _LANG_PREFIXES:
            return ("text", "") if colon else ("hidden", "")
        if prefix in other or prefix in _INTERWIKI:
            return "text", ""
    return "article", _norm_title(t.split("#", 1)[0])


def _pipe_trick(title: str) -> str:
    shown = title.strip().lstrip(":")
    if ":" in shown:
        shown = shown.split(":", 1)[1]
    shown = re.sub(r"\s*\([^()]*\)\s*$", "", shown)
    return shown.split(",", 1)[0].strip()


def _dropped_tag(node: Tag) -> bool:
    name = str(node.tag).strip().lower()
    return name in DROPPED_TAGS or name == "nowiki" or node.wiki_markup in ("{|", "|", "||", "!", "!!", "|-", "|+")


def _render(code, lang: str, links: list[tuple[str, str]] | None) -> str:
    """The text a reader sees of ``code``; the kept article links are appended to ``links``."""
    out: list[str] = []
    nodes = code.nodes
    trail_re = MEDIAWIKI_TRAILS[lang]
    for k, node in enumerate(nodes):
        if isinstance(node, Text):
            out.append(str(node.value))
        elif isinstance(node, HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, (Template, Argument, Comment)):
            continue
        elif isinstance(node, Heading):
            out.append(_render(node.title, lang, links))
        elif isinstance(node, ExternalLink):
            if node.title is not None:
                out.append(_render(node.title, lang, links))
        elif isinstance(node, Tag):
            if _dropped_tag(node):
                continue
            if node.contents is not None:
                out.append(_render(node.contents, lang, links))
        elif isinstance(node, Wikilink):
            kind, target = _classify(str(node.title), lang)
            if kind == "hidden":
                continue
            if node.text is None:
                label = html.unescape(str(node.title)).strip().lstrip(":")
            elif not str(node.text).strip():
                label = _pipe_trick(html.unescape(str(node.title)))
            else:  # links inside a label are not links (MediaWiki), so their text only
                label = _render(node.text, lang, None)
            out.append(label)  # the trail letters come with the next Text node
            if kind == "article" and links is not None and label.strip():
                links.append((target, " ".join((label + _trail(nodes, k, trail_re)).split())))
    return "".join(out)


def _trail(nodes: list, k: int, trail_re: re.Pattern[str] | None) -> str:
    """The link trail of the link at ``nodes[k]``: the trail letters that start the next node
    (comments are gone before MediaWiki reads trails: ``[[T]]<!-- -->s`` is ``Ts``)."""
    k += 1
    while k < len(nodes) and isinstance(nodes[k], Comment):
        k += 1
    if trail_re is None or k >= len(nodes) or not isinstance(nodes[k], Text):
        return ""
    m = trail_re.match(str(nodes[k].value))
    return m.group() if m else ""


_INDENTED_TABLE_RE = re.compile(r"(^|\n)[ \t]*:+[ \t]*(?=\{\|)")


def oracle_links(wikitext: str, lang: str) -> list[tuple[str, str]]:
    """``(target, anchor)`` of the article links MediaWiki shows outside templates, tables and
    dropped tags, read with mwparserfromhell (see the module docs)."""
    links: list[tuple[str, str]] = []
    _render(mwparserfromhell.parse(_INDENTED_TABLE_RE.sub(r"\1", wikitext)), lang, links)
    return links


def our_links(wikitext: str, lang: str) -> list[tuple[str, str]]:
    """``(target, anchor)`` of the article links ``parse_wikitext`` keeps."""
    text, spans = parse_wikitext(wikitext, rules_for(lang))
    return [(title, " ".join(text[s:e].split())) for s, e, title in spans]


def missing(expected: list[tuple[str, str]], got: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The links of ``expected`` not found in ``got`` in the same order (a greedy subsequence match)."""
    out, j = [], 0
    for link in expected:
        k = j
        while k < len(got) and got[k] != link:
            k += 1
        if k < len(got):
            j = k + 1
        else:
            out.append(link)
    return out


# -- a seeded generator of real-looking pages ----------------------------------------------------
_WORDS = {
    "en": [
        "the",
        "city",
        "river",
        "was",
        "founded",
        "in",
        "north",
        "of",
        "and",
        "near",
        "capital",
        "largest",
        "port",
        "century",
        "old",
        "town",
    ],
    "de": [
        "die",
        "Stadt",
        "liegt",
        "am",
        "Fluss",
        "und",
        "ist",
        "größte",
        "Hauptstadt",
        "im",
        "Norden",
        "des",
        "alten",
        "Landes",
    ],
    "ru": ["город", "река", "находится", "в", "на", "и", "столица", "крупнейший", "порт", "века", "старый", "север"],
    "ar": ["مدينة", "في", "هي", "نهر", "عاصمة", "و", "أكبر", "ميناء", "القرن", "شمال", "القديمة"],
    "ja": ["は", "の", "が", "を", "に", "首都", "である", "流れる", "最大", "港", "北部", "古い", "都市"],
}
_TITLES = {
    "en": ["Tokyo", "Japan", "River Thames", "New York City", "Mount Fuji", "Battle of Hastings", "Paris"],
    "de": ["Berlin", "Deutschland", "Rhein", "Köln", "Bayern", "Hamburger Hafen", "Zugspitze"],
    "ru": ["Москва", "Россия", "Волга", "Санкт-Петербург", "Байкал", "Красная площадь"],
    "ar": ["القاهرة", "مصر", "نهر النيل", "الإسكندرية", "الأهرامات", "البحر الأحمر"],
    "ja": ["東京", "日本", "富士山", "京都市", "大阪府", "琵琶湖"],
}
_TRAILS = {
    "en": ["s", "ese", "n", "ian"],
    "de": ["s", "es", "n", "ern", "än"],
    "ru": ["е", "у", "ой", "ы", "ом"],
    "ar": ["ي", "ية", "ون"],
    "ja": ["は", "の", "で"],
}
_SECTIONS = {"en": "History", "de": "Geschichte", "ru": "История", "ar": "تاريخ", "ja": "歴史"}
_FILE = {"en": "File", "de": "Datei", "ru": "Файл", "ar": "ملف", "ja": "ファイル"}
_CATEGORY = {"en": "Category", "de": "Kategorie", "ru": "Категория", "ar": "تصنيف", "ja": "カテゴリ"}
_HELP = {"en": "Help", "de": "Hilfe", "ru": "Справка", "ar": "مساعدة", "ja": "ヘルプ"}


class PageGenerator:
    """Real-looking article wikitext in one language, from a seed (same seed, same pages)."""

    def __init__(self, lang: str, seed: int) -> None:
        self.lang = lang
        self.rng = random.Random(f"{lang}-{seed}")
        self.sep = "" if lang == "ja" else " "

    def words(self, lo: int = 2, hi: int = 6) -> str:
        return self.sep.join(self.rng.choice(_WORDS[self.lang]) for _ in range(self.rng.randint(lo, hi)))

    def title(self) -> str:
        return self.rng.choice(_TITLES[self.lang])

    def link(self) -> str:
        """One link as editors write them: plain, piped, sectioned, lower-case first letter,
        underscores, with a trail, a trail cut by <nowiki/>, a formatted label, the pipe trick."""
        r, t = self.rng, self.title()
        form = r.randrange(17)
        if form == 0:
            return f"[[{t}]]"
        if form == 1:
            return f"[[{t}|{self.words(1, 3)}]]"
        if form == 2:
            return f"[[{t}#{_SECTIONS[self.lang]}|{self.words(1, 2)}]]"
        if form == 3:
            return f"[[{t[0].lower() + t[1:]}]]"
        if form == 4:
            return f"[[{t.replace(' ', '_')}|{self.words(1, 2)}]]"
        if form == 5:
            return f"[[{t}]]{r.choice(_TRAILS[self.lang])}"
        if form == 6:
            return f"[[{t}]]<nowiki/>{r.choice(_TRAILS[self.lang])}"
        if form == 7:
            return f"[[{t}|''{self.words(1, 2)}'']]"
        if form == 8:
            return f"'''[[{t}]]'''"
        if form == 9:
            return f"[[{t} (disambiguation)|]]"
        trail = r.choice(_TRAILS[self.lang])
        if form == 10:
            return f"'''[[{t}]]'''{trail}"
        if form == 11:
            return f"[[{t}]]''{trail}''"
        if form == 12:
            return f"[[{t}]]<ref>{self.words(1, 2)}</ref>{trail}"
        if form == 13:
            return f"[[{t}]]<!-- {self.words(1, 2)} -->{trail}"
        if form == 14:
            return f"[[{t}]]<br />{trail}"
        if form == 15:
            return f"[[{t}]]{{{{sfn|{self.words(1, 1)}|2001}}}}{trail}"
        return f"[[{t}|{self.words(1, 2)}]]{trail}"

    def sentence(self) -> str:
        parts = [self.words()]
        for _ in range(self.rng.randint(1, 3)):
            parts += [self.link(), self.words(1, 4)]
        end = "。" if self.lang == "ja" else "."
        return self.sep.join(parts) + end

    def template(self, depth: int = 0) -> str:
        inner = self.template(depth + 1) if depth < 2 and self.rng.random() < 0.5 else self.link()
        return f"{{{{Infobox settlement|name={self.title()}|capital={self.link()}|note={inner}}}}}"

    def table(self) -> str:
        indent = self.rng.choice(["", ":", "::"])
        rows = "\n".join(
            f"|-\n| {self.link()} || {self.words(1, 2)} || {self.link()}" for _ in range(self.rng.randint(1, 3))
        )
        nested = '\n|-\n|\n{| class="wikitable"\n| ' + self.link() + "\n|}" if self.rng.random() < 0.3 else ""
        return (
            f'{indent}{{| class="wikitable sortable"\n|+ {self.words(1, 2)}\n'
            f"! {self.words(1, 1)} !! {self.words(1, 1)}\n{rows}{nested}\n|}}"
        )

    def block(self) -> str:
        """One paragraph-level piece of a page."""
        r, lang = self.rng, self.lang
        kind = r.randrange(16)
        if kind <= 3:
            return self.sentence() + self.sep + self.sentence()
        if kind == 4:
            return (
                self.sentence()
                + f"<ref>{{{{cite web|title={self.link()}|url=http://example.org}}}}</ref>"
                + self.sep
                + self.sentence()
            )
        if kind == 5:
            return (
                self.sentence() + f'<ref name="r{r.randrange(3)}">{self.words()} {self.link()}</ref><ref name="r0" />'
            )
        if kind == 6:
            return self.template() + "\n" + self.sentence()
        if kind == 7:
            return self.table()
        if kind == 8:
            return (
                f"<gallery>\n{_FILE[lang]}:A.jpg|{self.link()} {self.words(1, 2)}\n"
                f"{_FILE[lang]}:B.png|{self.words(1, 2)}\n</gallery>"
            )
        if kind == 9:
            return f"[[{_FILE[lang]}:Map.svg|thumb|right|{self.words(1, 2)} {self.link()}]]\n" + self.sentence()
        if kind == 10:
            return "\n".join(f"{r.choice(['*', '#', ':', '**'])} {self.sentence()}" for _ in range(r.randint(1, 3)))
        if kind == 11:
            return f"== {self.words(1, 2)} {self.link()} ==\n" + self.sentence()
        if kind == 12:
            tag = r.choice(["span", "div", "small", "blockquote"])
            return f'<{tag} lang="{lang}">{self.sentence()}</{tag}>'
        if kind == 13:
            return f"<!-- {self.link()} -->" + self.sentence() + f"<math>x^2</math> <code>{self.link()}</code>"
        if kind == 14:
            return (
                self.sentence() + f" [[{_HELP[lang]}:Contents|{self.words(1, 1)}]] [[wikt:{self.words(1, 1)}]]"
                f" [[:fr:{self.title()}|{self.words(1, 1)}]] [[#{_SECTIONS[lang]}|{self.words(1, 1)}]]"
            )
        return self.sentence() + f" [http://example.org {self.words(1, 2)}]" + self.sep + self.sentence()

    def page(self) -> str:
        blocks = [self.block() for _ in range(self.rng.randint(3, 9))]
        tail = (
            f"\n\n[[{_CATEGORY[self.lang]}:{self.title()}]]\n[[{'fr' if self.lang != 'fr' else 'en'}:{self.title()}]]"
        )
        return "'''" + self.title() + "''' " + self.sentence() + "\n\n" + "\n\n".join(blocks) + tail
