"""Word segmentation and part of speech for the mention rules of :mod:`kb.mentions.linkability`.

Japanese and Chinese write no spaces, and a place name found inside a sentence may be part of a longer word
(京都大学, 荷兰豆) or a person's surname (福山雅治); Russian capitalises a common noun that opens a sentence
(*Шахты закрыли* "the mines were closed"). These analysers tell such words apart:

- Japanese: ``sudachipy`` with ``sudachidict_core`` (Apache-2.0; Rust wheels for every platform, the dictionary
  is about 70 MB), in its longest unit mode (``C``): each token carries a part of speech, 人名 for a person's
  surname or given name, 地名 for a place (東京都 stays one place);
- Chinese: ``jieba`` (MIT, pure Python; its dictionary of 350,000 words with part-of-speech tags), cut without
  its HMM guesser so that only dictionary words join characters;
- Russian: ``pymorphy3`` with ``pymorphy3-dicts-ru`` (MIT; OpenCorpora's dictionary): the parses of a word with
  their likelihoods, ``Geox`` marking a place.

They come with the ``segment`` extra (``pip install mluke[segment]``, part of ``test``) and are imported on
first use only (each loads in well under a second). Without them every function here returns ``None`` and the
rules that need them are skipped: linking still works, with the rules of :mod:`kb.mentions.linkability` alone.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, NamedTuple


class Token(NamedTuple):
    """One word of a segmented text: character offsets and its part-of-speech tags."""

    start: int
    end: int
    pos: tuple[str, ...]


@functools.cache
def _sudachi() -> Any:
    try:
        from sudachipy import Dictionary, SplitMode
    except ImportError:
        return None
    try:
        dictionary = Dictionary(dict="core")
        # tokenizer() in sudachipy 0.7, create() (deprecated there) before
        make = getattr(dictionary, "tokenizer", None) or dictionary.create
        tokenizer = make(mode=SplitMode.C)
    except Exception:  # sudachipy without its dictionary package: the rules are skipped
        return None
    return tokenizer


@functools.cache
def _jieba() -> Any:
    try:
        import jieba
        import jieba.posseg
    except ImportError:
        return None
    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg


@functools.cache
def _morph() -> Any:
    try:
        import pymorphy3
    except ImportError:
        return None
    try:
        return pymorphy3.MorphAnalyzer(lang="ru")
    except Exception:  # pymorphy3 without its Russian dictionaries: the rule is skipped
        return None


@functools.lru_cache(maxsize=512)
def tokens(text: str, lang: str) -> tuple[Token, ...] | None:
    """``text`` cut into words with their part of speech (Japanese: ``sudachipy``'s tags, 名詞 固有名詞 人名 姓;
    Chinese: ``jieba``'s, ``ns`` a place, ``nr`` a person), or ``None`` where ``lang`` has no analyser here or
    its package is not installed."""
    if lang == "ja":
        tokenizer = _sudachi()
        if tokenizer is None:
            return None
        return tuple(Token(m.begin(), m.end(), tuple(m.part_of_speech())) for m in tokenizer.tokenize(text))
    if lang in ("zh", "zh-hans", "zh-hant"):
        posseg = _jieba()
        if posseg is None:
            return None
        out, at = [], 0
        for pair in posseg.cut(text, HMM=False):
            out.append(Token(at, at + len(pair.word), (pair.flag,)))
            at += len(pair.word)
        return tuple(out)
    return None


def covering(text: str, lang: str, start: int, end: int) -> Token | None:
    """The word of ``text`` that holds the characters ``start:end`` whole, or ``None`` (no analyser, or the
    span crosses a word boundary)."""
    found = tokens(text, lang)
    if found is None:
        return None
    return next((t for t in found if t.start <= start and end <= t.end), None)


@functools.lru_cache(maxsize=4096)
def russian_common_word(word: str) -> bool | None:
    """Whether ``word`` reads more likely as a common word than as a place or a person's name in
    ``pymorphy3``'s parses (Шахты "mines", Находка "a find", Орёл "eagle"; not Москва, Киев, Берлин): the
    parses without ``Geox``, ``Name``, ``Surn`` or ``Patr`` weigh more than those with ``Geox``. ``None``
    without ``pymorphy3``."""
    morph = _morph()
    if morph is None:
        return None
    common = place = 0.0
    for parse in morph.parse(word):
        tag = parse.tag
        if "Geox" in tag:
            place += parse.score
        elif not any(g in tag for g in ("Name", "Surn", "Patr", "Orgn", "Trad")):
            common += parse.score
    return common > place
