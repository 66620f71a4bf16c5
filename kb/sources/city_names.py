"""Which of a city's GeoNames names each language uses as its label, and which as aliases.

GeoNames alternate names carry no language tags, so each language picks by
script and spelling; the names it
admits but does not pick become aliases (readings, official long forms,
other spellings), so that they resolve too, and a city GeoNames names in no
form a language admits has no label in it. Ties go to GeoNames order.
- ja: names in kanji and kana, with kanji in JIS X 0213 and no simplified
  Chinese form (GB 2312 only: 滨 关), so never 横滨市 or 下关市; outside CN,
  HK, MO, TW, JP, KR and KP a name needs kana (ラパス), as a Han-only name
  there is Chinese (拉巴斯城). A name only in hiragana (おおさかし), or for a
  Japanese city only in katakana (ヨコハマ), is a reading: an alias, the
  label only where GeoNames has nothing else (Saitama's official name is
  さいたま市, and GeoNames has just さいたま). Then: the Japanese form over a
  Chinese spelling of the same name (広州 over 廣州 and 广州, 仏山市 over
  佛山); the short form of a name GeoNames also has with 市 区 町 村 県 郡
  (大阪 over 大阪市, so both resolve), or a kana name with its 市 (いわき市,
  not 磐城); a name with 市 区 町 村 (市原市 over 原, 四日市市 over 四日).
- zh: Han-only names. Last, names with a Japanese-only form (JIS X 0208,
  neither GB 2312 nor Big5: 広 戸 黒; kept as the label only where nothing
  else exists, e.g. 目黒, never as aliases); for Japanese cities first a name
  with a character Japanese does not write (横滨市, 神户市 over 横浜, 神戸);
  the simplified over the traditional spelling of a name (广州 over 廣州,
  阜阳市 over 阜陽); the short form (上海 over 上海市); a name with 市.
- ko: Hangul names: the short form of a name GeoNames also has with 시, 광역시,
  특별시, 군 or 구 (부산 over 부산광역시); then one with 시, GeoNames' copy of the
  Wikipedia title (톈진 시 over the Sino-Korean 천진). "X 시" is labelled X,
  with "X 시" and "X시" as aliases (오사카).
- ru: names in the Russian alphabet (no і ї є ґ ў ђ ј љ њ ћ џ ә ө ү ң...),
  without a Bulgarian ъ (Russian writes it only before е ё ю я) or Mongolian
  doubled vowels (ээ, уу). Then: a transliteration of the GeoNames name
  (similarity >= 0.5, g/h/kh alike: Мумбаи, Санкт-Петербург, not Бомбей,
  Ленинград); for Chinese cities a Palladius spelling (чж, цз: Гуанчжоу,
  Тяньцзинь) over others (Гуанджоу); the full over the shortened form
  (Санкт-Петербург over Петербург); the closer transliteration, in quarters;
  hyphenated over spaced (Рио-де-Жанейро).
- ar: names in the Arabic alphabet, no letter Persian, Urdu, Kurdish or
  Uyghur add (پ چ ژ گ ک ی ٹ ە ۇ ...), no ة or ى inside a word, no zero-width
  non-joiner, vowel marks (harakat) removed. Then the short form of a longer
  name (وهران over ولاية وهران, مكة over مكة المكرمة; a last word is short
  only after an administrative word, so غازي عنتاب stays whole); no
  punctuation; in countries where Arabic is official, a name ending in ة
  rather than ه and starting with ال (الإسكندرية, طنجة, not اسكندريه, تنجه).
- hi: Devanagari names: the short form (मुम्बई over ग्रेटर मुम्बई), no
  punctuation, no Marathi ळ, Nepali ङ or final virama (बंगलौर over बंगळूर).
- bn (no Assamese ৰ ৱ), te, el, th: names in the script: the short form
  (th, written without spaces: without a prefix such as รัฐ or จังหวัด, so
  รีโอเดจาเนโร), no punctuation (হায়দ্রাবাদ over হায়দরাবাদ এম. কর্পোরেশন).
- Latin-script languages: the GeoNames name, mostly the local one (Köln,
  Kraków, São Paulo) but English for some big cities (Munich, Milan); for a
  Vietnamese city in vi the alternate that spells it with Vietnamese letters
  (Hanoi -> Hà Nội). The GeoNames name and a GeoNames spelling of the label
  without diacritics (Rajkot for Rājkot) are aliases.
Limits: without language tags, another language's name that uses none of
its own letters passes (Persian or Urdu in ar, Ukrainian, Bulgarian or
Serbian in ru, Marathi or Nepali in hi); older names can win where nothing
marks them (레닌그라드 in ko); and German, Italian... exonyms (München,
Milano) cannot be told from other languages' spellings, so Latin-script
languages have them only where CLDR does (Wien, Roma, Warszawa).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from kb.sources.scripts import (
    ALPHABETS,
    chinese_only,
    encodes,
    is_han,
    is_hiragana,
    is_kana,
    is_kanji,
    is_katakana,
    is_letter_or_mark,
    japanese_only,
    similarity,
    skeleton,
)

#: The languages written in the Latin script, which label a city with its GeoNames name.
LATIN_LANGS: frozenset[str] = frozenset(
    {"de", "en", "es", "fi", "fr", "id", "it", "nl", "pl", "pt", "sv", "sw", "tr", "vi"}
)
#: Countries whose places ja and zh write in Han characters; elsewhere a Han-only name is a Chinese transliteration.
_HAN_COUNTRIES = frozenset({"CN", "HK", "JP", "KP", "KR", "MO", "TW"})
_CHINESE_COUNTRIES = frozenset({"CN", "HK", "MO", "TW"})


#: Names in the right alphabet that still betray another language.
_FOREIGN_RE = {
    # ة ى inside a word (Kurdish, Uyghur); the zero-width non-joiner (Persian)
    "ar": re.compile("[\u0629\u0649](?=[\u0621-\u064a])|\u200c"),
    # Bulgarian ъ is a vowel (Russian writes it only before е ё ю я); Mongolian doubles long vowels (Бээжин)
    "ru": re.compile("ъ(?![еёюя])|ээ|уу", re.IGNORECASE),
}
_HARAKAT_RE = re.compile("[\u064b-\u0652\u0670]")
_PUNCTUATION_RE = re.compile(r"[.,;:()/،]")  # হায়দরাবাদ এম. কর্পোরেশন (a municipal corporation)
_SPACES_RE = re.compile(r"\s+")
#: Administrative words before an Arabic-script name: province, city, governorate, emirate, district, port...
_ARABIC_ADMIN = frozenset({"ولاية", "مدينة", "محافظة", "إمارة", "ضلع", "قضاء", "بلدية", "بندر", "شهر", "قصبه"})
#: Administrative suffixes GeoNames names come with (大阪市, 上海市, 톈진 시, 부산광역시): a name that also comes
#: with one is the short form ...
_ADMIN_SUFFIXES = {
    "ja": ("市", "区", "町", "村", "県", "郡"),
    "zh": ("市", "区", "區", "县", "縣", "镇", "鎮"),
    "ko": (" 시", "시", "광역시", "특별시", "특별자치시", " 군", "군", " 구", "구"),
}
#: ... and a name ending in one of these is a city's official name (市原市 beats 原 in ja; 青浦区 does not beat
#: 夏阳 in zh, where GeoNames adds the districts of towns).
_CITY_SUFFIXES = {"ja": ("市", "区", "町", "村"), "zh": ("市",), "ko": (" 시", "시")}
#: Letters only Vietnamese writes, and its other accented letters: GeoNames names Vietnamese cities in ASCII
#: (Hanoi), and an alternate name written with them is the Vietnamese spelling (Hà Nội).
_VIETNAMESE_LETTERS = ("ăđơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹĩũ", "àáâãèéêìíòóôõùúý")


class CityNames:
    """A city's GeoNames alternate names, cleaned once and shared by every language's rules."""

    def __init__(self, city: dict) -> None:
        self.city = city
        self.country: str = city["countrycode"]
        # One space between words, none at the ends (GeoNames has 会津若松 with an ideographic space).
        self.names = list(dict.fromkeys(_SPACES_RE.sub(" ", n).strip() for n in city["alternatenames"]))
        self.letters = {n: [c for c in n if is_letter_or_mark(c)] for n in self.names}

    def written_in(self, is_letter: Callable[[str], bool]) -> list[str]:
        """The names whose letters (and marks) all pass ``is_letter``, in GeoNames order."""
        return [n for n in self.names if self.letters[n] and all(map(is_letter, self.letters[n]))]

    @functools.cached_property
    def by_skeleton(self) -> dict[str, list[str]]:
        """The Latin-script names by :func:`skeleton`."""
        index: dict[str, list[str]] = {}
        for name in self.names:
            key = skeleton(name)
            if key:
                index.setdefault(key, []).append(name)
        return index


# -- ranking a city's names ------------------------------------------------------------------
def _best(forms: list[str], rank: Callable[[str], tuple]) -> str:
    """The best-ranked name; ties go to the first in GeoNames order, so the choice is deterministic."""
    return min(enumerate(forms), key=lambda item: (rank(item[1]), item[0]))[1]


def _admin_rank(name: str, forms: list[str], lang: str) -> int:
    """0: the short form of another name (大阪 of 大阪市); 1: a city's name with its suffix (四日市市); 2: other."""
    if any(name + s in forms for s in _ADMIN_SUFFIXES[lang]):
        return 0
    return 1 if any(name.endswith(s) and len(name) > len(s) for s in _CITY_SUFFIXES[lang]) else 2


def _containment_rank(name: str, forms: list[str], lang: str) -> int:
    """0: the short form of another name (मुम्बई of ग्रेटर मुम्बई, وهران of ولاية وهران); 2: a long form; 1: neither.

    Arabic names are often compounds whose last word is no short form (غازي عنتاب, الخرطوم بحري): there a name
    is short only where it starts the long one or follows an administrative word.
    """

    def inside(short: str, long: str) -> bool:
        if lang == "th":  # no spaces: a prefix or suffix of two letters or more (รัฐ, จังหวัด; not a tone mark)
            rest = long.removeprefix(short) if long.startswith(short) else long.removesuffix(short)
            return rest != long and sum(c.isalpha() for c in rest) >= 2
        if long.startswith(short + " "):
            return True
        return long.endswith(" " + short) and (lang != "ar" or long[: -len(short) - 1] in _ARABIC_ADMIN)

    if any(inside(name, other) for other in forms):
        return 0
    return 2 if any(inside(other, name) for other in forms) else 1


def _variant_of(name: str, forms: list[str], preferred: Callable[[str, str], bool]) -> bool:
    """Whether another of ``forms`` spells ``name`` with preferred characters: same length (a 市 aside), and
    ``preferred(ours, theirs)`` wherever the characters differ (臺中 ~ 台中, 阜陽 ~ 阜阳市, 廣州 ~ 広州)."""
    name = name.removesuffix("市")
    for other in forms:
        other = other.removesuffix("市")
        if other != name and len(other) == len(name) and all(a == b or preferred(a, b) for a, b in zip(name, other)):
            return True
    return False


def _simplified_form(ours: str, theirs: str) -> bool:
    """``theirs`` is simplified (GB 2312, not Big5) where ``ours`` is traditional (Big5, not GB 2312)."""
    return not encodes(ours, "gb2312") and not encodes(theirs, "big5")


def _japanese_form(ours: str, theirs: str) -> bool:
    """``theirs`` is a Japanese-only form (広, 仏) where ``ours`` is not (廣 广, 佛)."""
    return japanese_only(theirs) and not japanese_only(ours)


# -- choosing a city's names per language ----------------------------------------------------
def _japanese_names(alt: CityNames) -> tuple[str | None, list[str]]:
    """ja: names in kanji and kana; readings (hiragana, and katakana for Japanese cities) are aliases."""
    forms: list[str] = []
    readings: list[str] = []
    for name in alt.written_in(lambda c: is_kana(c) or is_kanji(c) or c in "々〆"):
        letters = alt.letters[name]
        if all(map(is_hiragana, letters)) or (alt.country == "JP" and all(map(is_katakana, letters))):
            readings.append(name)
        elif alt.country in _HAN_COUNTRIES or any(map(is_kana, letters)):
            forms.append(name)  # elsewhere a Han-only name is Chinese (拉巴斯城)
    if not forms:  # Saitama's official name is in hiragana (さいたま市), and GeoNames has nothing else
        return (readings[0], readings[1:]) if readings else (None, [])

    def rank(name: str) -> tuple:
        kana_city = any(name == r + s for r in readings for s in _ADMIN_SUFFIXES["ja"])  # いわき市, not 磐城
        return (_variant_of(name, forms, _japanese_form), 0 if kana_city else _admin_rank(name, forms, "ja"))

    label = _best(forms, rank)
    return label, [n for n in forms + readings if n != label]


def _chinese_names(alt: CityNames) -> tuple[str | None, list[str]]:
    """zh: Han-only names, Chinese before Japanese forms, simplified before traditional, short before long."""
    forms = alt.written_in(is_han)
    if not forms:
        return None, []
    japan = alt.country == "JP"

    def rank(name: str) -> tuple:  # 目黒 (Japanese 黒) only where GeoNames has no 目黑: GBK has Japanese forms too
        return (
            any(map(japanese_only, name)),
            japan and not any(map(chinese_only, name)),  # 横滨市, not 横浜
            _variant_of(name, forms, _simplified_form),
            _admin_rank(name, forms, "zh"),
        )

    label = _best(forms, rank)
    return label, [n for n in forms if n != label and not any(map(japanese_only, n))]


def _script_rank(name: str, forms: list[str], lang: str, alt: CityNames, official: frozenset[str]) -> tuple:
    """How ko, ru, ar, hi, bn, te, el and th rank a name written in their alphabet (lower is better)."""
    if lang == "ko":  # 톈진 시 (from a Wikipedia title) beats the Sino-Korean reading 천진
        return (_admin_rank(name, forms, "ko"),)
    if lang == "ru":  # the current name (Мумбаи, not Бомбей), Palladius for Chinese cities, full and hyphenated
        closeness = similarity(name, alt.city["name"])
        palladius = 0 if ("чж" in name or "цз" in name) else 2 if ("дж" in name or "нг" in name) else 1
        shortened = any(other.endswith("-" + name) for other in forms)  # Петербург of Санкт-Петербург
        return (
            closeness < 0.5,
            alt.country in _CHINESE_COUNTRIES and palladius,
            shortened,
            -round(closeness * 4),
            " " in name,
        )  # in quarters: Пекин, not the closer Serbian Пекинг
    rank = (_containment_rank(name, forms, lang), bool(_PUNCTUATION_RE.search(name)))
    if lang == "ar" and "ar" in official:  # Arab cities: الإسكندرية, طنجة (not the Persian-style اسكندريه, تنجه)
        return (*rank, name.endswith("ه"), not name.startswith("ال"))
    if lang == "hi":  # ळ is Marathi, ङ Nepali or Sanskrit, a final virama Sanskrit: Hindi writes ल, ं
        return (*rank, "ळ" in name or "ङ" in name or name.endswith("्"))
    if lang == "th":
        return (*rank, name.startswith(("จังหวัด", "รัฐ")))  # province, state
    return rank


def _script_names(alt: CityNames, lang: str, official: frozenset[str]) -> tuple[str | None, list[str]]:
    """ko, ru, ar, hi, bn, te, el, th: names in the language's alphabet, ranked by :func:`_script_rank`."""
    foreign = _FOREIGN_RE.get(lang)
    forms: list[str] = []
    vocalized: list[str] = []
    for name in alt.written_in(ALPHABETS[lang]):
        if foreign and foreign.search(name):
            continue
        if lang == "ar" and _HARAKAT_RE.search(name):  # labels unvocalised, as Arabic is written
            vocalized.append(name)
            name = _HARAKAT_RE.sub("", name)
        if name not in forms:
            forms.append(name)
    if not forms:
        return None, []
    label = _best(forms, lambda n: _script_rank(n, forms, lang, alt, official))
    aliases = [n for n in forms + vocalized if n != label]
    if lang == "ko" and label.endswith(" 시") and label[:-2] not in forms:
        aliases += [label, label[:-2] + "시"]  # 오사카 시 -> 오사카 (and 오사카시, the Wikipedia title)
        label = label[:-2]
    return label, aliases


def _latin_names(alt: CityNames, lang: str, official: frozenset[str]) -> tuple[str, list[str]]:
    """Latin-script languages: the GeoNames name; for Vietnamese cities in vi, its Vietnamese spelling."""
    name = alt.city["name"]
    if lang != "vi" or lang not in official or not name.isascii():
        return name, [name]
    own, accents = _VIETNAMESE_LETTERS

    def own_letters(spelling: str) -> int:  # -1: a letter Vietnamese does not write
        letters = [c.lower() for c in alt.letters[spelling] if not c.isascii()]
        return sum(c in own for c in letters) if all(c in own or c in accents for c in letters) else -1

    spelled = [a for a in alt.by_skeleton.get(skeleton(name), []) if own_letters(a) > 0]
    return (max(spelled, key=own_letters) if spelled else name), [name]


def ascii_spelling(label: str, alt: CityNames) -> list[str]:
    """``label`` without diacritics, where GeoNames has that spelling too (Rajkot for Rājkot), so it resolves."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", label) if not unicodedata.combining(c))
    return [plain] if plain != label and plain in alt.names else []


def _city_names(alt: CityNames, lang: str, official: frozenset[str]) -> tuple[str | None, list[str]]:
    """The city's label in ``lang`` (None: GeoNames has no name in its script) and its other names there."""
    if lang in LATIN_LANGS:
        return _latin_names(alt, lang, official)
    if lang == "ja":
        return _japanese_names(alt)
    if lang == "zh":
        return _chinese_names(alt)
    return _script_names(alt, lang, official)


def choose(names: CityNames, lang: str, official: frozenset[str]) -> tuple[str | None, list[str]]:
    """The city's label in ``lang`` (``None``: GeoNames has no name in a form ``lang`` admits) and its other
    accepted names there; ``official``: the languages official in the city's country."""
    return _city_names(names, lang, official)
