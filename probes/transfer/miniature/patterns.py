"""The sentence patterns of the miniature sets (``probes/data/miniature_patterns.json``, written for mluke) and
filling them with names: the text, its NER words, and where each name stands.

Pattern ``i`` of a task means the same in every language. Slots are ``{city}``, ``{capital}``,
``{country}``, ``{country2}``, ``{continent}``, ``{language}``, ``{currency}``; in Korean, ``{slot}~A/B``
attaches particle A after a final consonant and B after a vowel. English and Dutch put an article before
some country names ("the United States"); it is text outside the entity.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

#: Pattern slot -> kb entity kind (``capital`` is a city, ``country2`` a second country).
SLOT_KINDS = {
    "city": "city",
    "capital": "city",
    "country": "country",
    "country2": "country",
    "continent": "continent",
    "language": "language",
    "currency": "currency",
}
#: Languages whose NER words are single characters (PAN-X splits these the same way).
CHAR_LANGUAGES = frozenset({"ja", "zh", "th"})


@cache
def load_patterns() -> dict[str, dict[str, tuple[str, ...]]]:
    """``{lang: {group: (pattern, ...)}}``; groups are ``"ner"``, the relation names and ``"no_relation"``."""
    data = json.loads(resources.files("probes").joinpath("data/miniature_patterns.json").read_text(encoding="utf-8"))
    return {lang: {g: tuple(ps) for g, ps in groups.items()} for lang, groups in data["patterns"].items()}


@cache
def load_typing_patterns() -> dict[str, tuple[str, ...]]:
    """``{lang: (pattern, ...)}`` of the entity-typing sets (``probes/data/miniature_typing.json``); slot ``{x}``
    is the typed mention, ``{y}`` a second name, each of any kind."""
    data = json.loads(resources.files("probes").joinpath("data/miniature_typing.json").read_text(encoding="utf-8"))
    return {lang: tuple(ps) for lang, ps in data["patterns"].items()}


#: no_relation pattern i pairs these two slots (the same in every language).
NO_RELATION_SLOTS = (("city", "country"), ("country", "country2"), ("country", "language"), ("city", "country"))

_EN_THE = re.compile(
    r"\b(Republic|Kingdom|States|Emirates|Islands|Territories|Territory|Netherlands|Antilles|"
    r"Philippines|Bahamas|Maldives|Comoros|Gambia)\b"
)
_NL_DE = re.compile(
    r"\b(Republiek|Staten|Emiraten|Filipijnen|Malediven|Comoren|Seychellen|Bahama’s|Antillen|"
    r"Marianen|[Gg]ebieden)\b|eilanden$"
)


def _article(lang: str, kind: str, label: str) -> str:
    """The article to write before a country name in ``lang`` ("" for none), lower case."""
    if kind != "country":
        return ""
    if lang == "en" and _EN_THE.search(label):
        return "the "
    if lang == "nl":
        if label.startswith("Verenigd Koninkrijk"):
            return "het "
        if _NL_DE.search(label):
            return "de "
    return ""


def _has_final_consonant(label: str) -> bool:
    """Whether a Korean name ends in a syllable with a final consonant (non-Hangul endings count as one)."""
    last = label[-1]
    if "\uac00" <= last <= "\ud7a3":
        return (ord(last) - 0xAC00) % 28 != 0
    return True


# -- rendering -------------------------------------------------------------------------------------------------------

_SLOT = re.compile(r"\{(\w+)\}(?:~([^\s/]+)/([^\s/.,!?;:()]+))?")
BAD_LABEL_CHARS = set('()[]{}<>（）［］,，،;"~\t\r\n|')


def pattern_slots(pattern: str) -> tuple[str, ...]:
    """The slot names of a pattern, in order.

    Args:
        pattern: a sentence pattern.

    Returns:
        The slot names.
    """
    return tuple(m.group(1) for m in _SLOT.finditer(pattern))


def is_punct(char: str) -> bool:
    """Whether a character is punctuation (Unicode category P*).

    Args:
        char: one character.

    Returns:
        True for punctuation.
    """
    return unicodedata.category(char).startswith("P")


def _literal_words(text: str, lang: str) -> list[str]:
    """Words of pattern text between names: characters for ja/zh/th, else space-split with punctuation apart."""
    if lang in CHAR_LANGUAGES:
        return [c for c in text if not c.isspace()]
    words: list[str] = []
    for chunk in text.split():
        head: list[str] = []
        tail: list[str] = []
        while chunk and is_punct(chunk[0]):
            head.append(chunk[0])
            chunk = chunk[1:]
        while chunk and is_punct(chunk[-1]):
            tail.insert(0, chunk[-1])
            chunk = chunk[:-1]
        words.extend(head)
        if chunk:
            words.append(chunk)
        words.extend(tail)
    return words


def name_words(label: str, lang: str) -> list[str]:
    """The NER words of an entity name: its characters (spaces left out) for ja/zh/th, else its space-split words.

    Args:
        label: the name.
        lang: its language.

    Returns:
        The words.
    """
    if lang in CHAR_LANGUAGES:
        return [c for c in label if not c.isspace()]
    return label.split()


@dataclass(frozen=True)
class Rendered:
    """A filled pattern: the text, its NER words, and per slot the character span and word span of the name."""

    text: str
    words: tuple[str, ...]
    chars: dict[str, tuple[int, int]]
    word_spans: dict[str, tuple[int, int]]


def render(pattern: str, lang: str, names: dict[str, str], kinds: Mapping[str, str] | None = None) -> Rendered:
    """Fill a pattern with names in one language; a slot used twice must not occur.

    Args:
        pattern: the sentence pattern.
        lang: its language.
        names: slot -> label.
        kinds: slot -> kb entity kind, for slots whose kind is not fixed (default :data:`SLOT_KINDS`); the kind
            decides whether an article goes before the name.

    Returns:
        The :class:`Rendered` text, its words and the character and word spans of every slot.
    """
    text = ""
    words: list[str] = []
    chars: dict[str, tuple[int, int]] = {}
    word_spans: dict[str, tuple[int, int]] = {}
    pos = 0
    for match in _SLOT.finditer(pattern):
        literal = pattern[pos : match.start()]
        text += literal
        words += _literal_words(literal, lang)
        slot = match.group(1)
        label = names[slot]
        article = _article(lang, (kinds or SLOT_KINDS)[slot], label)
        if article:
            if not text.strip():
                article = article[0].upper() + article[1:]
            text += article
            words += _literal_words(article, lang)
        chars[slot] = (len(text), len(text) + len(label))
        text += label
        first = len(words)
        words += name_words(label, lang)
        word_spans[slot] = (first, len(words))
        if match.group(2):
            particle = match.group(2) if _has_final_consonant(label) else match.group(3)
            text += particle
            words += _literal_words(particle, lang)
        pos = match.end()
    literal = pattern[pos:]
    text += literal
    words += _literal_words(literal, lang)
    return Rendered(text, tuple(words), chars, word_spans)
