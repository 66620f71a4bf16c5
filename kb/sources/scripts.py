"""Letters and scripts of place names: which script a character belongs to (Han, kana, the Japanese and
Chinese forms told apart by their character sets, the alphabets of the non-Latin languages), and the
spelling-insensitive forms names are compared in (:func:`fold`, :func:`skeleton`, :func:`similarity`).
Used by :mod:`kb.sources.city_names` to choose each language's names of a city."""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Callable


def _in(lo: int, hi: int) -> Callable[[str], bool]:
    return lambda ch: lo <= ord(ch) <= hi


def is_han(ch: str) -> bool:
    return 0x4E00 <= ord(ch) <= 0x9FFF or 0x3400 <= ord(ch) <= 0x4DBF or 0xF900 <= ord(ch) <= 0xFAFF


def is_hiragana(ch: str) -> bool:
    return 0x3041 <= ord(ch) <= 0x309F or ch == "ー"


def is_katakana(ch: str) -> bool:
    return 0x30A0 <= ord(ch) <= 0x30FF or 0x31F0 <= ord(ch) <= 0x31FF


def is_kana(ch: str) -> bool:
    return is_hiragana(ch) or is_katakana(ch)


@functools.cache
def encodes(ch: str, codec: str) -> bool:
    """Whether the character set of ``codec`` has ``ch`` (JIS, GB 2312 and Big5 tell Japanese and Chinese apart)."""
    try:
        ch.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def japanese_only(ch: str) -> bool:
    """A Japanese form Chinese does not write, 広 沢 県 黒 (JIS X 0208, neither GB 2312 nor Big5)."""
    return is_han(ch) and encodes(ch, "shift_jis") and not encodes(ch, "gb2312") and not encodes(ch, "big5")


def chinese_only(ch: str) -> bool:
    """A Chinese form Japanese does not write, 滨 户 戶 圳 (GB 2312 or Big5, not JIS X 0208)."""
    return is_han(ch) and not encodes(ch, "shift_jis") and (encodes(ch, "gb2312") or encodes(ch, "big5"))


def is_kanji(ch: str) -> bool:
    """A Han character Japanese writes: in JIS X 0213 (so 深圳's 圳 is) and not a simplified Chinese form, which
    GB 2312 has and neither Big5 nor JIS X 0208 (关 滨 户: JIS X 0213 lists a few of them as rarities)."""
    simplified = encodes(ch, "gb2312") and not encodes(ch, "big5") and not encodes(ch, "shift_jis")
    return is_han(ch) and encodes(ch, "euc_jis_2004") and not simplified


def is_arabic(ch: str) -> bool:
    """A letter or vowel mark of the Arabic alphabet, not one Persian, Urdu, Kurdish or Uyghur add (پ ی ڈ ە ۇ)."""
    return 0x0621 <= ord(ch) <= 0x063A or 0x0640 <= ord(ch) <= 0x0652 or ch == "\u0670"


_RUSSIAN = frozenset("АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдеёжзийклмнопрстуфхцчшщъыьэюя")
#: Per non-Latin language (ja aside): the letters of its alphabet.
ALPHABETS: dict[str, Callable[[str], bool]] = {
    "ar": is_arabic,
    "bn": lambda ch: 0x0980 <= ord(ch) <= 0x09FF and ch not in "ৰৱ",  # ৰ ৱ: Assamese
    "el": _in(0x0370, 0x03FF),
    "hi": _in(0x0900, 0x097F),
    "ko": _in(0xAC00, 0xD7AF),
    "ru": _RUSSIAN.__contains__,  # not і ї є ґ ў ђ ј љ њ ћ џ ә ө ү ң...
    "te": _in(0x0C00, 0x0C7F),
    "th": _in(0x0E00, 0x0E7F),
    "zh": is_han,
}


@functools.cache
def is_letter_or_mark(ch: str) -> bool:
    return ch.isalpha() or unicodedata.category(ch).startswith("M")


def fold(text: str) -> str:
    """Lower-case ASCII-ish form for matching GeoNames and CLDR spellings ("Bogotá" ~ "Bogota")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


_SKELETON_MAP = str.maketrans({"đ": "d", "ı": "i", "ł": "l", "ø": "o", "æ": "ae", "œ": "oe", "ß": "ss"})
_NOT_ALNUM_RE = re.compile(r"[^a-z0-9]+")


def skeleton(text: str) -> str:
    """The ASCII letters and digits of ``text``: no case, diacritics, spaces or dashes ("Hà Nội" ~ "Hanoi")."""
    text = unicodedata.normalize("NFKD", text.lower().translate(_SKELETON_MAP))
    return _NOT_ALNUM_RE.sub("", text.encode("ascii", "ignore").decode("ascii"))


#: Russian letters in a plain Latin transliteration (for :func:`similarity`).
_RU_LATIN = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z", "и": "i", "й": "y",
    "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t", "у": "u", "ф": "f",
    "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "yu",
    "я": "ya",
}  # fmt: skip


def similarity(name: str, latin: str) -> float:
    """How closely the Russian ``name`` transliterates the Latin ``latin`` (0..1); g, h and kh count as one
    sound, as Russian writes a foreign h with г or х (Гамбург, Хьюстон)."""

    def sounds(text: str) -> str:
        return skeleton(text).replace("kh", "h").replace("g", "h")

    roman = "".join(_RU_LATIN.get(c, c) for c in name.lower())
    return difflib.SequenceMatcher(None, sounds(roman), sounds(latin)).ratio()
