"""Rules for scripts written without spaces (Japanese, Chinese) in the link-probability estimates
(:mod:`kb.mentions.linkability`): a match inside a longer word (トルコライス, 美国人), what a word segmenter
says of it (:mod:`kb.mentions.segmenters`), and person names around it (松本さん, チャド・スミス, 王长春, 杰克·伦敦)."""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Literal

from kb.mentions import segmenters
from kb.mentions.compiled import Mention
from kb.mentions.frequencies import COMPOUND_ZIPF, zipf

#: Japanese honorifics and titles after a person's name (松本さん, 福岡氏).
_JA_HONORIFICS = ("さん", "氏", "様", "さま", "君", "くん", "ちゃん", "先生", "選手", "監督", "容疑者", "被告")
#: Chinese surnames (the most common ones that are not also prepositions or other function words: 于 向 在 ...),
#: which before a two-character place name at a clause start make a person's name (王长春, 李成都).
_ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙朱胡郭何林罗郑梁谢宋唐许韩冯邓曹彭曾肖董袁潘蒋蔡杜魏吕丁沈姚卢姜崔钟谭陆汪廖贾韦邹孟熊秦邱尹薛闫侯龚邵钱覃"
)
#: Han characters that make a place name out of a place name (Tokyo + Metropolis ...): not another word.
_PLACE_SUFFIXES = set("市都県府道州省区町村郡国島")
#: Katakana letters and marks; not the middle dot ・ (U+30FB), which separates words (ベネズエラ・メリダ).
_KATAKANA = re.compile(r"[\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: Dots that join the parts of a foreign person's name written in Han characters (杰克·伦敦, 乔治・华盛顿).
_NAME_DOTS = "·・‧•"
#: Han characters after a place name that make a demonym or a language of it (美国人, 日本语), not the place.
_DERIVING_SUFFIXES = set("人語语話话")


def segmenter_verdict(text: str, m: Mention, lang: str) -> Literal["name", "inside"] | None:
    """What a word segmenter (:mod:`kb.mentions.segmenters`) says of an unspaced-script mention: inside a
    longer word that is no place (京都大学, トルコ石 for トルコ; 荷兰豆, 香港脚: in Chinese, where ``jieba``'s
    dictionary joins many phrases, only a word that the place opens and that does not end in a word of two
    characters or more, 日本首相), or a person's name (福山 in 福山雅治, tagged 人名 by ``sudachipy``); ``None``
    where it says nothing or is not installed;
    ``"name"`` for a person's name, ``"inside"`` for a longer word."""
    word = segmenters.covering(text, lang, m.start, m.end)
    if word is None:
        return None
    whole = (word.start, word.end) == (m.start, m.end)
    if lang == "ja":
        if "人名" in word.pos:
            return "name"
        if not whole and "地名" not in word.pos:
            return "inside"
        return None
    if whole or word.start < m.start:
        return None
    rest = text[m.end : word.end]
    # a place suffix (北京市) or a word of its own after the place (日本 + 首相, 中国 + 政府): the place still
    # names itself there; one character that makes a new word of it (荷兰豆, 香港脚) does not
    if set(rest) <= _PLACE_SUFFIXES or (len(rest) >= 2 and (zipf(rest, lang) or 0.0) >= COMPOUND_ZIPF):
        return None
    return "inside"


def inside_word(text: str, m: Mention, lang: str) -> bool:
    """An unspaced-script match that is a piece of a longer word (see :data:`kb.mentions.linkability.INSIDE_WORD`)."""
    before = text[m.start - 1] if m.start > 0 else ""
    after = text[m.end] if m.end < len(text) else ""
    if (_KATAKANA.match(m.surface[-1]) and after and _KATAKANA.match(after)) or (
        _KATAKANA.match(m.surface[0]) and before and _KATAKANA.match(before)
    ):
        return True
    if not after or after in _PLACE_SUFFIXES or not (_HAN.match(after) or _KATAKANA.match(after)):
        return False
    if after in _DERIVING_SUFFIXES:
        return not word_starts(text, m.end, lang, 2)
    for k in range(1, 4):
        piece = text[m.end : m.end + k]
        if len(piece) < k or not all(_HAN.match(c) or _KATAKANA.match(c) for c in piece):
            break
        z = zipf(m.surface + piece, lang)
        if z is not None and z >= COMPOUND_ZIPF:
            return not word_starts(text, m.end, lang, max(2, k))
    return False


def word_starts(text: str, at: int, lang: str, length: int) -> bool:
    """Whether a word of ``length`` characters or more (in ``wordfreq``, Zipf >= 3.0) starts at ``at``."""
    for j in range(length, 6):
        piece = text[at : at + j]
        if len(piece) < j:
            return False
        z = zipf(piece, lang)
        if z is not None and z >= COMPOUND_ZIPF:
            return True
    return False


def unspaced_person(text: str, m: Mention, lang: str, starts: Container[int], ends: Container[int]) -> bool:
    """Japanese: a katakana word joined by ・ (チャド・スミス) or an honorific after the mention (松本さん);
    Chinese: a common surname just before a two-character mention at a clause start (王长春)."""
    if lang == "ja":
        if text.startswith(_JA_HONORIFICS, m.end):
            return True
        if (
            text[m.end : m.end + 1] == "・"
            and _KATAKANA.match(text[m.end + 1 : m.end + 2])
            and (m.end + 1) not in starts
        ):
            return True
        return (
            m.start >= 2
            and text[m.start - 1] == "・"
            and bool(_KATAKANA.match(text[m.start - 2]))
            and (m.start - 1) not in ends
        )
    if lang.startswith("zh") and (
        (text[m.end : m.end + 1] in _NAME_DOTS and (m.end + 1) not in starts and m.end + 1 < len(text))
        or (m.start >= 2 and text[m.start - 1] in _NAME_DOTS and (m.start - 1) not in ends)
    ):
        return True
    if lang == "zh" and len(m.surface) == 2 and m.start >= 1 and text[m.start - 1] in _ZH_SURNAMES:
        return (m.start - 1) not in ends and (m.start == 1 or not _HAN.match(text[m.start - 2]))
    return False
