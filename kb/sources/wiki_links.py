"""How one wiki's links read: namespace names, interlanguage and interwiki prefixes, link trails, and what a
link target is (an article, text only, or hidden). Used by :func:`kb.sources.wikitext.parse_wikitext`."""

from __future__ import annotations

import html
import re
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

#: Wikipedia language editions (interlanguage link prefixes).
_WIKI_LANGS = frozenset({
    "aa", "ab", "ace", "ady", "af", "ak", "als", "alt", "am", "ami", "an", "ang", "anp", "ar", "arc", "ary", "arz",
    "as", "ast", "atj", "av", "avk", "awa", "ay", "az", "azb", "ba", "ban", "bar", "bat-smg", "bbc", "bcl", "bdr",
    "be", "be-tarask", "be-x-old", "bew", "bg", "bh", "bi", "bjn", "blk", "bm", "bn", "bo", "bpy", "br", "bs",
    "btm", "bug", "bxr", "ca", "cbk-zam", "cdo", "ce", "ceb", "ch", "cho", "chr", "chy", "ckb", "co", "cr", "crh",
    "cs", "csb", "cu", "cv", "cy", "da", "dag", "de", "dga", "din", "diq", "dsb", "dtp", "dty", "dv", "dz", "ee",
    "el", "eml", "en", "eo", "es", "et", "eu", "ext", "fa", "fat", "ff", "fi", "fiu-vro", "fj", "fo", "fon", "fr",
    "frp", "frr", "fur", "fy", "ga", "gag", "gan", "gcr", "gd", "gl", "glk", "gn", "gom", "gor", "got", "gpe",
    "gsw", "gu", "guc", "gur", "guw", "gv", "ha", "hak", "haw", "he", "hi", "hif", "ho", "hr", "hsb", "ht", "hu",
    "hy", "hyw", "hz", "ia", "iba", "id", "ie", "ig", "igl", "ii", "ik", "ilo", "inh", "io", "is", "it", "iu",
    "ja", "jam", "jbo", "jv", "ka", "kaa", "kab", "kbd", "kbp", "kcg", "kg", "kge", "ki", "kj", "kk", "kl", "km",
    "kn", "knc", "ko", "koi", "kr", "krc", "ks", "ksh", "ku", "kus", "kv", "kw", "ky", "la", "lad", "lb", "lbe",
    "lez", "lfn", "lg", "li", "lij", "lld", "lmo", "ln", "lo", "lrc", "lt", "ltg", "lv", "lzh", "mad", "mai",
    "map-bms", "mdf", "mg", "mh", "mhr", "mi", "min", "mk", "ml", "mn", "mni", "mnw", "mo", "mos", "mr", "mrj",
    "ms", "mt", "mus", "mwl", "my", "myv", "mzn", "na", "nah", "nap", "nds", "nds-nl", "ne", "new", "ng", "nia",
    "nl", "nn", "no", "nov", "nqo", "nr", "nrm", "nso", "nup", "nv", "ny", "oc", "olo", "om", "or", "os", "pa",
    "pag", "pam", "pap", "pcd", "pcm", "pdc", "pfl", "pi", "pih", "pl", "pms", "pnb", "pnt", "ps", "pt", "pwn",
    "qu", "rki", "rm", "rmy", "rn", "ro", "roa-rup", "roa-tara", "rsk", "ru", "rue", "rup", "rw", "sa", "sah",
    "sat", "sc", "scn", "sco", "sd", "se", "sg", "sgs", "sh", "shi", "shn", "si", "simple", "sk", "skr", "sl",
    "sm", "smn", "sn", "so", "sq", "sr", "srn", "ss", "st", "stq", "su", "sv", "sw", "syl", "szl", "szy", "ta",
    "tay", "tcy", "tdd", "te", "tet", "tg", "th", "ti", "tig", "tk", "tl", "tly", "tn", "to", "tpi", "tr", "trv",
    "ts", "tt", "tum", "tw", "ty", "tyv", "udm", "ug", "uk", "ur", "uz", "ve", "vec", "vep", "vi", "vls", "vo",
    "vro", "wa", "war", "wo", "wuu", "xal", "xh", "xmf", "yi", "yo", "yue", "za", "zea", "zgh", "zh",
    "zh-classical", "zh-min-nan", "zh-yue", "zu"
})  # fmt: skip
#: Sister-project interwiki prefixes.
_INTERWIKI = frozenset({
    "b", "c", "commons", "d", "m", "mw", "meta", "n", "q", "s", "species", "v", "voy", "w", "wikt", "wikibooks",
    "wikidata", "wikimedia", "wikinews", "wikipedia", "wikiquote", "wikisource", "wikispecies", "wikiversity",
    "wikivoyage", "wiktionary", "foundation", "wmf", "phab", "mediawikiwiki", "outreach", "incubator"
})  # fmt: skip
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


def display(target: str, anchor: str | None) -> str:
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
