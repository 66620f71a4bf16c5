"""Wikitext to plain text with link spans: the fast reader behind the Wikipedia dump builder.

:func:`parse_wikitext` turns an article's wikitext into the text a reader sees
(prose, headings, list items) and the article links in it, as
``(start, end, target title)`` spans over that text (Python string indices, i.e.
code points; an emoji outside the BMP is one position).

What it does, in this order, with a few C-speed regular expressions and one
Python-level loop per link:

- drops comments, templates and parser functions (``{{...}}``, ``{{{...}}}``,
  nested to any depth), tables (``{| ... |}``, also indented: ``:{| ... |}``),
  and tags whose content is not prose (:data:`DROPPED_TAGS`): ``<ref>``, ``<math>``,
  ``<gallery>``, ``<syntaxhighlight>``...;
  keeps the content of ``<nowiki>`` literally (never parsed as markup);
- drops file/image/media and category links (with nested links in captions)
  and interlanguage links, using the namespace names of the dump's own
  ``<siteinfo>`` plus the canonical English ones that MediaWiki accepts everywhere;
- keeps the anchor text of other links: ``[[T]]``, ``[[T|a]]``, ``[[T#s|a]]``,
  ``[[T]]suffix`` (the link trail joins the anchor: the letters of MediaWiki's ``$linkTrail``
  for the language, see :data:`LINK_TRAILS`; ``<nowiki/>`` ends it), the pipe trick ``[[T (x)|]]``;
  links into other namespaces (``[[Help:X|x]]``), section links (``[[#s]]``) and
  inter-wiki links (``[[:fr:X]]``, ``[[wikt:x]]``) stay as text but are not
  article links;
- strips external-link brackets (``[http://x text]`` -> ``text``), bold/italic
  quotes, heading ``=``, list markers, remaining HTML tags and magic words, and
  decodes HTML entities (``&nbsp;``, ``&amp;``).

Broken markup (unclosed templates, links, comments or tags) never raises: an
unclosed ``{{`` or ``[[`` is dropped as two characters, an unclosed comment or
table runs to the end of the page, as MediaWiki renders them.

It is not a full MediaWiki parser: templates are not expanded (their text is
lost, as with ``mwparserfromhell``'s ``strip_code``). See benchmarks/RESULTS.md
for its speed against ``mwparserfromhell``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from kb.db.titles import normalize_title

#: Canonical (English) namespace names MediaWiki accepts on every wiki, with their number.
CANONICAL_NAMESPACES: dict[str, int] = {
    "media": -2, "special": -1, "talk": 1, "user": 2, "user talk": 3, "project": 4, "wikipedia": 4,
    "project talk": 5, "wikipedia talk": 5, "file": 6, "image": 6, "file talk": 7, "image talk": 7,
    "mediawiki": 8, "mediawiki talk": 9, "template": 10, "template talk": 11, "help": 12, "help talk": 13,
    "category": 14, "category talk": 15, "portal": 100, "portal talk": 101, "draft": 118, "draft talk": 119,
    "timedtext": 710, "timedtext talk": 711, "module": 828, "module talk": 829,
}  # fmt: skip
#: Namespaces whose links are not shown as text: images and media (6, -2) and categories (14).
HIDDEN_LINK_NAMESPACES = frozenset({-2, 6, 14})

# Wikipedia language editions (interlanguage link prefixes) and sister-project interwiki prefixes.
_WIKI_LANGS = frozenset(
    [
        "aa",
        "ab",
        "ace",
        "ady",
        "af",
        "ak",
        "als",
        "alt",
        "am",
        "ami",
        "an",
        "ang",
        "anp",
        "ar",
        "arc",
        "ary",
        "arz",
        "as",
        "ast",
        "atj",
        "av",
        "avk",
        "awa",
        "ay",
        "az",
        "azb",
        "ba",
        "ban",
        "bar",
        "bat-smg",
        "bbc",
        "bcl",
        "bdr",
        "be",
        "be-tarask",
        "be-x-old",
        "bew",
        "bg",
        "bh",
        "bi",
        "bjn",
        "blk",
        "bm",
        "bn",
        "bo",
        "bpy",
        "br",
        "bs",
        "btm",
        "bug",
        "bxr",
        "ca",
        "cbk-zam",
        "cdo",
        "ce",
        "ceb",
        "ch",
        "cho",
        "chr",
        "chy",
        "ckb",
        "co",
        "cr",
        "crh",
        "cs",
        "csb",
        "cu",
        "cv",
        "cy",
        "da",
        "dag",
        "de",
        "dga",
        "din",
        "diq",
        "dsb",
        "dtp",
        "dty",
        "dv",
        "dz",
        "ee",
        "el",
        "eml",
        "en",
        "eo",
        "es",
        "et",
        "eu",
        "ext",
        "fa",
        "fat",
        "ff",
        "fi",
        "fiu-vro",
        "fj",
        "fo",
        "fon",
        "fr",
        "frp",
        "frr",
        "fur",
        "fy",
        "ga",
        "gag",
        "gan",
        "gcr",
        "gd",
        "gl",
        "glk",
        "gn",
        "gom",
        "gor",
        "got",
        "gpe",
        "gsw",
        "gu",
        "guc",
        "gur",
        "guw",
        "gv",
        "ha",
        "hak",
        "haw",
        "he",
        "hi",
        "hif",
        "ho",
        "hr",
        "hsb",
        "ht",
        "hu",
        "hy",
        "hyw",
        "hz",
        "ia",
        "iba",
        "id",
        "ie",
        "ig",
        "igl",
        "ii",
        "ik",
        "ilo",
        "inh",
        "io",
        "is",
        "it",
        "iu",
        "ja",
        "jam",
        "jbo",
        "jv",
        "ka",
        "kaa",
        "kab",
        "kbd",
        "kbp",
        "kcg",
        "kg",
        "kge",
        "ki",
        "kj",
        "kk",
        "kl",
        "km",
        "kn",
        "knc",
        "ko",
        "koi",
        "kr",
        "krc",
        "ks",
        "ksh",
        "ku",
        "kus",
        "kv",
        "kw",
        "ky",
        "la",
        "lad",
        "lb",
        "lbe",
        "lez",
        "lfn",
        "lg",
        "li",
        "lij",
        "lld",
        "lmo",
        "ln",
        "lo",
        "lrc",
        "lt",
        "ltg",
        "lv",
        "lzh",
        "mad",
        "mai",
        "map-bms",
        "mdf",
        "mg",
        "mh",
        "mhr",
        "mi",
        "min",
        "mk",
        "ml",
        "mn",
        "mni",
        "mnw",
        "mo",
        "mos",
        "mr",
        "mrj",
        "ms",
        "mt",
        "mus",
        "mwl",
        "my",
        "myv",
        "mzn",
        "na",
        "nah",
        "nap",
        "nds",
        "nds-nl",
        "ne",
        "new",
        "ng",
        "nia",
        "nl",
        "nn",
        "no",
        "nov",
        "nqo",
        "nr",
        "nrm",
        "nso",
        "nup",
        "nv",
        "ny",
        "oc",
        "olo",
        "om",
        "or",
        "os",
        "pa",
        "pag",
        "pam",
        "pap",
        "pcd",
        "pcm",
        "pdc",
        "pfl",
        "pi",
        "pih",
        "pl",
        "pms",
        "pnb",
        "pnt",
        "ps",
        "pt",
        "pwn",
        "qu",
        "rki",
        "rm",
        "rmy",
        "rn",
        "ro",
        "roa-rup",
        "roa-tara",
        "rsk",
        "ru",
        "rue",
        "rup",
        "rw",
        "sa",
        "sah",
        "sat",
        "sc",
        "scn",
        "sco",
        "sd",
        "se",
        "sg",
        "sgs",
        "sh",
        "shi",
        "shn",
        "si",
        "simple",
        "sk",
        "skr",
        "sl",
        "sm",
        "smn",
        "sn",
        "so",
        "sq",
        "sr",
        "srn",
        "ss",
        "st",
        "stq",
        "su",
        "sv",
        "sw",
        "syl",
        "szl",
        "szy",
        "ta",
        "tay",
        "tcy",
        "tdd",
        "te",
        "tet",
        "tg",
        "th",
        "ti",
        "tig",
        "tk",
        "tl",
        "tly",
        "tn",
        "to",
        "tpi",
        "tr",
        "trv",
        "ts",
        "tt",
        "tum",
        "tw",
        "ty",
        "tyv",
        "udm",
        "ug",
        "uk",
        "ur",
        "uz",
        "ve",
        "vec",
        "vep",
        "vi",
        "vls",
        "vo",
        "vro",
        "wa",
        "war",
        "wo",
        "wuu",
        "xal",
        "xh",
        "xmf",
        "yi",
        "yo",
        "yue",
        "za",
        "zea",
        "zgh",
        "zh",
        "zh-classical",
        "zh-min-nan",
        "zh-yue",
        "zu",
    ]
)
_INTERWIKI = frozenset(
    [
        "b",
        "c",
        "commons",
        "d",
        "m",
        "mw",
        "meta",
        "n",
        "q",
        "s",
        "species",
        "v",
        "voy",
        "w",
        "wikt",
        "wikibooks",
        "wikidata",
        "wikimedia",
        "wikinews",
        "wikipedia",
        "wikiquote",
        "wikisource",
        "wikispecies",
        "wikiversity",
        "wikivoyage",
        "wiktionary",
        "foundation",
        "wmf",
        "phab",
        "mediawikiwiki",
        "outreach",
        "incubator",
    ]
)
#: Languages written without spaces between words: no word-boundary test, and no link trail
#: unless :data:`LINK_TRAILS` gives MediaWiki's.
NO_SPACE_LANGUAGES = frozenset(
    {"ja", "zh", "th", "km", "lo", "my", "bo", "dz", "zh-yue", "yue", "wuu", "gan", "zh-classical", "lzh", "zh-min-nan"}
)
_ARABIC_MARKS = "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
#: The letters of a link trail (``[[Japan]]ese``), as MediaWiki's ``$linkTrail`` of
#: ``languages/messages/Messages{Xx}.php`` has them, for the languages checked against it
#: (ja and zh define none and inherit English's). Other languages: any run of letters (``[^\W\d_]+``), or none for
#: :data:`NO_SPACE_LANGUAGES`.
LINK_TRAILS: dict[str, str] = {
    "en": "a-z",
    "de": "äöüßa-z",
    "ru": "a-zабвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "ar": "a-zء-يچ" + _ARABIC_MARKS,
    "ja": "a-z",
    "zh": "a-z",
}

_DROP_TAGS = (
    "ref|references|math|chem|ce|score|timeline|gallery|syntaxhighlight|source|graph|mapframe|maplink"
    "|templatedata|templatestyles|imagemap|hiero|inputbox|categorytree|indicator|section|charinsert"
    "|pre|code|noinclude|includeonly|onlyinclude"
)
#: Tags whose content is dropped (not prose), as documented above.
DROPPED_TAGS = frozenset(_DROP_TAGS.split("|"))
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# The page's own characters of the placeholder plane (private use, group 2) are saved like
# <nowiki> contents, so that none of them is taken for a placeholder when the pieces are put back.
_NOWIKI_RE = re.compile(
    r"<nowiki\s*>(.*?)</nowiki\s*>|<nowiki\s*/>|([\U000f0000-\U000ffffd])", re.DOTALL | re.IGNORECASE
)
_DROP_TAG_RE = re.compile(
    rf"<({_DROP_TAGS})(?:\s[^>]*?)?/>|<({_DROP_TAGS})(?:\s[^>]*)?>.*?</\2\s*>", re.DOTALL | re.IGNORECASE
)
# Every pattern starts with a literal, so that the regex engine scans for it at C speed.
_OPEN_BRACES_RE = re.compile(r"\{\{+")
_CLOSE_BRACES_RE = re.compile(r"\}\}+")
_TABLE_RE = re.compile(r"\n[ \t:]*(?:\{\||\|\})")
_EXTLINK_RE = re.compile(r"\[(?:https?:|ftp:|mailto:|//)[^\s\[\]<>]*(?:[ \t]+([^\]\n]*))?\]", re.IGNORECASE)
_HEADING_RE = re.compile(r"\n(=+)[ \t]*([^\n]*?)[ \t]*\1[ \t]*(?=\n|$)")
_QUOTES_RE = re.compile(r"''+")
_LIST_RE = re.compile(r"\n(?:[*#:;]+[ \t]*|----+[ \t]*(?=\n|$))")
_TAG_RE = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>")
_MAGIC_RE = re.compile(r"__[A-Z]+__")
_BLANK_LINES_RE = re.compile(r"\n[ \t\u00a0]*\n[ \t\u00a0\n]*")
_SPACES_RE = re.compile(r"  +")
_LINK_OPEN_RE = re.compile(r"\[\[")
_LINK_CLOSE_RE = re.compile(r"\]\]")
_LINK_END_RE = re.compile(r"\]\](?=<|''|\{\{)")
_PLACEHOLDER_RE = re.compile("[\U000f0000-\U000ffffc]")
# Ends a link trail where markup was removed (``<nowiki/>``, quotes or a tag right after ``]]``);
# the last code point of the placeholder plane, never an index into the saved pieces.
_TRAIL_STOP = "\U000ffffd"
_PLANE_RE = re.compile("[\U000f0000-\U000ffffd]")
_PLACEHOLDER_BASE = 0xF0000


@dataclass(frozen=True, eq=False)
class LinkRules:
    """How to read links in one wiki: its language and namespace names.

    ``namespaces`` maps a lower-case namespace name (as in ``<siteinfo>``) to its
    number; the canonical English names are always known too.
    """

    lang: str
    namespaces: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = dict(CANONICAL_NAMESPACES)
        names.update({_fold(k): v for k, v in self.namespaces.items() if k})
        object.__setattr__(self, "_names", names)
        if self.lang in LINK_TRAILS:
            trail = f"[{LINK_TRAILS[self.lang]}]+"
        else:
            trail = "" if self.lang in NO_SPACE_LANGUAGES else r"[^\W\d_]+"
        object.__setattr__(self, "_trail_re", re.compile(trail) if trail else None)

    def prefix_kind(self, prefix: str) -> str | None:
        """'hidden' (file/category), 'namespace', 'language', 'interwiki' or None for a title prefix."""
        key = _fold(prefix)
        ns = self._names.get(key)  # type: ignore[attr-defined]
        if ns is not None:
            return "hidden" if ns in HIDDEN_LINK_NAMESPACES else "namespace"
        if key in _WIKI_LANGS:
            return "language"
        if key in _INTERWIKI:
            return "interwiki"
        return None


def _fold(name: str) -> str:
    return " ".join(name.replace("_", " ").split()).lower()


def _tokens(
    text: str, open_re: re.Pattern[str], close_re: re.Pattern[str] | None, is_open: Callable[[str], bool] | None = None
) -> list[tuple[int, int, bool, int]]:
    """``(start, end, is_opener, levels)`` of the tokens in ``text``, in order.

    With two patterns, a run of brackets counts one level per pair. With one
    pattern, ``is_open`` tells the openers and every token is one
    level: ``\n:{|`` (a colon-indented table) opens one table, not two.
    """
    if close_re is None:
        return [(m.start(), m.end(), is_open(m.group()), 1) for m in open_re.finditer(text)]  # type: ignore[misc]
    toks = [(m.start(), m.end(), True, max(1, (m.end() - m.start()) // 2)) for m in open_re.finditer(text)]
    toks.extend((m.start(), m.end(), False, (m.end() - m.start()) // 2) for m in close_re.finditer(text))
    toks.sort()
    return toks


def _strip_balanced(text: str, toks: list[tuple[int, int, bool, int]], unclosed_to_end: bool) -> str:
    """Remove the spans between matching opening and closing tokens (one pass, with a stack).

    A closer with nothing open is dropped; an unclosed opener is dropped alone, or with
    the rest of the text if ``unclosed_to_end``.
    """
    stack: list[list[int]] = []  # [start, levels still open]
    cut: list[tuple[int, int]] = []
    for start, end, is_open, levels in toks:
        if is_open:
            stack.append([start, end, levels])
            continue
        if not stack:
            cut.append((start, end))
            continue
        opened_at = -1
        while levels and stack:
            top = stack[-1]
            used = min(levels, top[2])
            top[2] -= used
            levels -= used
            if top[2] == 0:
                opened_at = stack.pop()[0]
        if opened_at >= 0:
            cut.append((opened_at, end))
    if stack:
        if unclosed_to_end:
            cut.append((stack[0][0], len(text)))
        else:
            cut.extend((start, end) for start, end, _ in stack)
    if not cut:
        return text
    cut.sort()
    out: list[str] = []
    keep_from = 0
    for start, end in cut:
        if start >= keep_from:
            out.append(text[keep_from:start])
            keep_from = end
        elif end > keep_from:
            keep_from = end
    out.append(text[keep_from:])
    return "".join(out)


def _protect_nowiki(text: str, saved: list[str]) -> str:
    def keep(m: re.Match[str]) -> str:
        piece = m.group(2) if m.group(2) is not None else m.group(1)
        if piece is None:  # <nowiki/> still ends a link trail and a line-start marker, as in MediaWiki
            return _TRAIL_STOP
        saved.append(piece)
        return chr(_PLACEHOLDER_BASE + len(saved) - 1) if len(saved) < 0xFFFD else ""

    return _NOWIKI_RE.sub(keep, text)


def _end_link_trails(text: str) -> str:
    """Put a trail stop after every ``]]`` that a tag, a quote run or a template follows.

    MediaWiki reads a link trail before it renders quotes and tags, so ``'''[[T]]'''s``,
    ``[[T]]<ref>..</ref>s`` and ``[[T]]<br>s`` show ``T`` as the anchor; removing the
    markup first would join ``s`` to it. A template right after a link (``{{sfn|..}}``,
    ``{{'s}}``, ``{{nbsp}}``) almost always expands to something that is not a letter,
    so it ends the trail too. The stop is removed with the placeholders. (Comments are
    removed before this: ``[[T]]<!-- -->s`` is ``Ts``, as in MediaWiki.)
    """
    return _LINK_END_RE.sub("]]" + _TRAIL_STOP, text)


def _restore(text: str, saved: list[str]) -> str:
    """Decode HTML entities and put ``<nowiki>`` contents back (both change lengths: done per piece)."""
    if _TRAIL_STOP in text:
        text = text.replace(_TRAIL_STOP, "")
    if "&" in text:
        text = html.unescape(text)
    return _put_back(text, saved)


def _put_back(text: str, saved: list[str]) -> str:
    """Put the saved pieces back in place of their placeholders."""
    if saved and _PLACEHOLDER_RE.search(text):
        text = _PLACEHOLDER_RE.sub(lambda m: saved[ord(m.group()) - _PLACEHOLDER_BASE], text)
    return text


def strip_markup(wikitext: str, saved: list[str]) -> str:
    """Everything but links: comments, tags, templates, tables, external links, formatting.

    ``<nowiki>`` contents are replaced by placeholders appended to ``saved``.
    """
    text = "\n" + wikitext  # line-start patterns look for "\n"
    if "<!--" in text:
        text = _COMMENT_RE.sub("", text)
    # Placeholders and trail stops are made below: the page's own characters of their plane are saved first.
    if ("nowiki" in text and "<" in text) or _PLANE_RE.search(text):
        text = _protect_nowiki(text, saved)
    if "]]" in text and ("<" in text or "''" in text or "{{" in text):
        text = _end_link_trails(text)
    if "<" in text:
        text = _DROP_TAG_RE.sub("", text)
    if "{{" in text or "}}" in text:
        text = _strip_balanced(text, _tokens(text, _OPEN_BRACES_RE, _CLOSE_BRACES_RE), unclosed_to_end=False)
    if "{|" in text:
        text = _strip_balanced(text, _tokens(text, _TABLE_RE, None, lambda t: "{|" in t), unclosed_to_end=True)
    if "[" in text:
        text = _EXTLINK_RE.sub(_extlink_text, text)
    if "\n=" in text:
        text = _HEADING_RE.sub(r"\n\2", text)
    if "''" in text:
        text = _QUOTES_RE.sub("", text)
    text = _LIST_RE.sub("\n", text)
    if "<" in text:
        text = _TAG_RE.sub("", text)
    if "__" in text:
        text = _MAGIC_RE.sub("", text)
    text = _BLANK_LINES_RE.sub("\n\n", text)
    text = _SPACES_RE.sub(" ", text)
    return text.strip()


def _extlink_text(m: re.Match[str]) -> str:
    return m.group(1) or ""


@lru_cache(maxsize=65536)
def classify_target(rules: LinkRules, target: str) -> tuple[str, str]:
    """``(kind, value)`` of a link target: ``("article", normalised title)``, ``("text", "")``
    (a link shown as text but not to an article) or ``("hidden", "")`` (not shown at all)."""
    t = target.strip()
    leading_colon = t.startswith(":")
    if leading_colon:
        t = t[1:].lstrip()
    if "%" in t:
        t = unquote(t)
    if "&" in t:
        t = html.unescape(t)
    if t.startswith("#") or not t:
        return ("text", "")
    if ":" in t:
        prefix = t.split(":", 1)[0]
        kind = rules.prefix_kind(prefix)
        if kind is not None:
            if leading_colon or kind in ("namespace", "interwiki"):
                return ("text", "")
            return ("hidden", "")  # a file, a category or an interlanguage link
    title = normalize_title(t.split("#", 1)[0])
    if not title or any(c in title for c in "[]{}|<>"):
        return ("text", "")
    return ("article", title)


def _display(target: str, anchor: str | None) -> str:
    """What a link shows: its anchor, or for ``[[T]]`` the target as written, for ``[[T (x)|]]``
    (the pipe trick) the target without the bracketed or comma part."""
    if anchor is None:
        return target.strip().lstrip(":")
    if anchor.strip():
        return anchor
    shown = target.strip().lstrip(":")
    if ":" in shown:
        shown = shown.split(":", 1)[1]
    shown = re.sub(r"\s*\([^()]*\)\s*$", "", shown)
    return shown.split(",", 1)[0].strip()


def parse_wikitext(wikitext: str, rules: LinkRules) -> tuple[str, list[tuple[int, int, str]]]:
    """Plain text of an article and its article links ``[(start, end, title)]``.

    ``text[start:end]`` is the link's anchor text (with its trail); ``title`` is the
    normalised target title (before redirects), without the section.
    """
    saved: list[str] = []
    text = strip_markup(wikitext, saved)
    if "[[" not in text:
        return _restore(text, saved).rstrip(), []
    text, links = _read_links(text, rules, saved)
    stripped = text.strip()  # removed links may leave spaces at the ends
    lead = text.find(stripped[:1]) if stripped else 0
    if lead:
        links = [(s - lead, e - lead, t) for s, e, t in links]
    return stripped, links


def _read_links(
    text: str, rules: LinkRules, saved: list[str], level: int = 0
) -> tuple[str, list[tuple[int, int, str]]]:
    pieces: list[str] = []
    links: list[tuple[int, int, str]] = []
    pos = 0  # length of the output so far
    i = 0  # read position in ``text``
    trail_match = rules._trail_re.match if rules._trail_re is not None else None  # type: ignore[attr-defined]
    tokens = [(m.start(), m.end(), True) for m in _LINK_OPEN_RE.finditer(text)]
    tokens.extend((m.start(), m.end(), False) for m in _LINK_CLOSE_RE.finditer(text))
    tokens.sort()
    n = len(tokens)
    k = 0
    while k < n:
        start, stop, is_open = tokens[k]
        if i < start:
            before = text[i:start]
            if saved or "&" in before or _TRAIL_STOP in before:
                before = _restore(before, saved)
            if before[:1] == " " and pieces and pieces[-1][-1:] == " ":
                before = before[1:]  # a dropped link leaves no double space
            pieces.append(before)
            pos += len(before)
        i = stop
        k += 1
        if not is_open:  # a stray closer: dropped
            continue
        if k < n and not tokens[k][2]:  # the usual case: no link inside this one
            j = k + 1
        else:  # find the matching closer, counting nested links (file captions)
            depth, j = 1, k
            while j < n and depth:
                depth += 1 if tokens[j][2] else -1
                j += 1
            if depth:  # unclosed: the two brackets are dropped
                continue
        close_start, i = tokens[j - 1][0], tokens[j - 1][1]
        nested = j - 1 > k
        k = j
        target, sep, anchor = text[stop:close_start].partition("|")
        kind, title = classify_target(rules, _put_back(target, saved))
        if kind == "hidden":
            continue
        if nested:  # links inside an anchor: keep their text only
            inner = anchor if sep else target
            shown = (
                _read_links(inner, rules, saved, level + 1)[0]
                if level < 8
                else _restore(inner.replace("[[", "").replace("]]", ""), saved)
            )
        else:
            shown = anchor if sep and anchor and not anchor.isspace() else _display(target, anchor if sep else None)
            if saved or "&" in shown or _TRAIL_STOP in shown:
                shown = _restore(shown, saved)
        if trail_match is not None:
            tm = trail_match(text, i)
            if tm is not None:
                shown += tm.group()
                i = tm.end()
        if kind == "article":
            stripped = shown.strip()
            if stripped:
                lead = shown.find(stripped[0])
                links.append((pos + lead, pos + lead + len(stripped), title))
        pieces.append(shown)
        pos += len(shown)
    rest = text[i:]
    if rest[:1] == " " and pieces and pieces[-1][-1:] == " ":
        rest = rest[1:]
    pieces.append(_restore(rest, saved) if saved or "&" in rest or _TRAIL_STOP in rest else rest)
    return "".join(pieces), links
