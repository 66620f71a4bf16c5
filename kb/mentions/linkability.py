"""Link probability of a detected mention: stored anchor statistics where the kb has them, else an estimate.

A Wikipedia build stores, per surface as written, the share of documents where it is
a link (LUKE's link probability). The mention index keeps one value per folded
surface (:attr:`kb.mentions.Mention.link_probability`, all spellings together);
:class:`LinkEstimator` prefers the value stored for the mention's exact spelling
(``EntityDB.link_probability``), so *Nice* and *nice* keep their own statistics. The
embedded kb and ``kb add`` have only names, so every name found in text would be a
certain link: "a nice day" would link *nice* to Nice. :class:`LinkEstimator` gives
such mentions an honest estimate instead, from evidence in the text itself:

========================  ======  ===================================================================
case                      value   why
========================  ======  ===================================================================
lowercase, cased script   0.02    ``LOWERCASE`` - every name of every candidate starts with a capital
                                  in this language (Nice, Reading, Türkiye), so a lowercase *nice*,
                                  *reading*, *turkey* is almost never the entity
inside a longer word      0.05    ``INSIDE_WORD`` - unspaced scripts: the match continues a katakana
                                  word (トルコライス) or, with the next characters, makes a common word
                                  (ローマ字 "romaji", in ``wordfreq``), or a demonym or language suffix
                                  follows (美国人, 日本语); place suffixes (市, 県, 州 ...)
                                  do not count, nor a continuation that is itself a word of two
                                  characters or more reaching as far (中国 + 外交部长)
after an article          0.02    ``AFTER_ARTICLE`` - an article or other determiner just before it
                                  (*The* French president, *die* Essen, *les* Tours) and no candidate is
                                  a country or continent (which take one: *la* France, *die* Schweiz)
part of a longer name     0.1     ``LONGER_NAME`` - a capitalised word the kb does not know is glued
                                  to it (*Paris* Hilton, Michael *Jordan*, *Chad* Smith: a word that
                                  opens the sentence counts when it reads as a first name, not as a
                                  function word, "In Paris": frequent in the other languages' word
                                  lists, or a first name of ``nomquamgender``'s name data, Whitney,
                                  Сергей);
                                  in Japanese a katakana word joined by ・ (チャド・スミス) or an
                                  honorific after it (松本さん), in Chinese a common surname just
                                  before it at a clause start (王长春)
                                  a word before a mention that is itself a first name makes one
                                  person's name at a sentence start too (Götz *George*, Enner
                                  *Valencia*), and so does a name particle and a capitalised word
                                  after it (*Dominique* de Villepin, :data:`~kb.mentions.names.NAME_PARTICLES`)
noun compound             0.05    ``INSIDE_WORD`` - English: the name and the lowercase word after it
                                  are a noun of WordNet that is no place (*Lima* beans, *Brussels*
                                  sprouts, *Panama* hats; not "Paris police": :mod:`kb.mentions.compounds`)
sentence start, verb       0.1     ``LONGER_NAME`` - a word opening the sentence right before an article
                                  ("Split the dough"): a verb, not a name
sentence start, foreign   0.1     ``LONGER_NAME`` - a place abroad (no official language of its country
                                  is the text's) whose name opening the sentence is much more frequent
                                  in the text's language than the place is famous
                                  (:data:`FOREIGN_WORD_GAP`: *Nice* work ... in English); a place at
                                  home when the gap is wider still (:data:`HOME_WORD_GAP`: German
                                  *Gerne* "gladly", a village; not *Hamburg*, *Köln* or *Reading*)
sentence start, common    0.5     ``SENTENCE_START_COMMON`` - capitalised only because a sentence
                                  starts there, and the word is common (Zipf frequency >= 5.0 in
                                  ``wordfreq``: *Reading*, *Nice*): case says nothing; unless the
                                  word is spelled as the best candidate's name and that entity is
                                  famous (:meth:`LinkEstimator.fame`: *London*, *China*, *Москва*),
                                  then ``CAPITALISED``
capitalised               0.95    ``CAPITALISED`` - a capitalised name mid-sentence, or a rare word
                                  at a sentence start
no case                   0.9     ``NO_CASE`` - scripts without case (Han, kana, Arabic, Devanagari
                                  ...): frequency is no evidence there (日本 and 東京 are among the
                                  most frequent words of Japanese); also lowercase mentions of
                                  entities that have lowercase names (e.g. language names in French),
                                  ``COMMON_NO_CASE`` (0.5) when the word is common (Zipf >= 5.0)
========================  ======  ===================================================================

First names come from ``nomquamgender`` (:mod:`kb.mentions.names`), English noun compounds from WordNet
(:mod:`kb.mentions.compounds`).
Word frequencies come from ``wordfreq`` (Apache-2.0 code, CC BY-SA 4.0 data,
~60 MB installed), which has 21 of the 24 mLUKE languages: for sw, te and th
there is no frequency evidence and only case (none in te and th) counts. The
lists are read as they are stored (``get_frequency_dict``), so Japanese and
Chinese need no MeCab or jieba.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, NamedTuple

from kb.mentions import compounds, segmenters, unspaced
from kb.mentions.compiled import Mention
from kb.mentions.frequencies import has_frequencies, zipf
from kb.mentions.names import NAME_PARTICLES, is_first_name

if TYPE_CHECKING:
    from kb.db.database import EntityDB

LOWERCASE = 0.02
AFTER_ARTICLE = 0.02
INSIDE_WORD = 0.05
LONGER_NAME = 0.1
SENTENCE_START_COMMON = 0.5
COMMON_NO_CASE = 0.5
NO_CASE = 0.9
CAPITALISED = 0.95
#: A word at least this frequent (Zipf scale: 5.0 = once per 100,000 words) is a common word.
COMMON_ZIPF = 5.0
#: An entity is famous when the median Zipf frequency of its names, over the other languages' word lists, is
#: at least this (London 5.0, China 5.2, Moscow 4.7, Munich 4.2; Reading 0.0, Nice 3.4, Essen 3.6).
FAMOUS_ZIPF = 4.0
#: A word that opens a sentence at least this frequent is a function word ("In", "The", "From": Zipf >= 6.0),
#: not a first name glued to the mention ("Michael" 5.1, "John" 5.4).
FUNCTION_ZIPF = 6.0
#: Articles and other determiners that make the next word a common noun (see :data:`AFTER_ARTICLE`).
_ARTICLE_WORDS = {
    "en": "the a an",
    "de": "der die das den dem des ein eine einen einem einer eines kein keine keinen keinem beim zum zur vom im am",
    "fr": "le la les l un une des du ce cette ces",
    "es": "el la los las un una unos unas",
    "it": "il lo la i gli le un uno una",
    "pt": "o a os as um uma uns umas",
    "nl": "de het een",
}
ARTICLES: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _ARTICLE_WORDS.items()}
#: Characters that end a sentence (or a clause that starts a new one, as after a colon).
_SENTENCE_END = ".!?:;…。！？\n"
#: Openers between a sentence end and its first word.
_OPENERS = "\"'“‘«„‚([{¿¡-–—•*"
_WORD_AFTER = re.compile(r" (\w+)")
_WORD_BEFORE = re.compile(r"(\w+) $")
_PARTICLE_AFTER = re.compile(r" (\w+) (\w+)")
_ARTICLE_BEFORE = re.compile(r"(?:^|[^\w'’])(\w+)(?: |['’])$")
#: Languages whose word lists tell a first name (frequent in all of them: Michael, Victoria) from a word of one
#: language (Near, Yesterday) in :meth:`LinkEstimator._name_like`.
_LATIN_PEERS = ("de", "en", "es", "fi", "fr", "id", "it", "nl", "pl", "pt", "sv", "tr")
#: Median Zipf frequency over :data:`_LATIN_PEERS` from which a word that opens a sentence is a first name.
NAME_ZIPF = 4.0
#: A foreign place's name opening a sentence is a common word of the language when its own Zipf frequency
#: exceeds the place's fame (:meth:`LinkEstimator.fame`) by this much (Nice in English: 5.4 against 3.9).
FOREIGN_WORD_GAP = 1.0
#: The same for a place at home, where a common word opening a sentence is the place only when it is a little
#: known place (German Gerne "gladly": 5.5 against 0.0; not Hamburg, 5.2 against 3.4, nor Reading, 5.1 against
#: 3.4: home places are talked about more than their fame abroad says).
HOME_WORD_GAP = 2.5


class Estimate(NamedTuple):
    """A link probability and where it comes from: ``"anchors"`` (stored) or the rule of the table above."""

    value: float
    reason: str


def _is_cased(ch: str) -> bool:
    return ch.lower() != ch.upper()


def _first_cased(text: str) -> str | None:
    return next((c for c in text if _is_cased(c)), None)


def is_sentence_start(text: str, start: int) -> bool:
    """Whether only openers (quotes, brackets, dashes) stand between ``start`` and a sentence end (or the
    start of the text)."""
    i = start - 1
    while i >= 0 and ((text[i].isspace() and text[i] != "\n") or text[i] in _OPENERS):
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


class LinkEstimator:
    """Link probabilities for the mentions of one kb: stored ones kept, the others estimated (module docs).

    Entity names are read from ``db`` once per (entity, language) and cached.
    """

    def __init__(self, db: EntityDB) -> None:
        self.db = db
        self._capitalised = functools.lru_cache(maxsize=1 << 16)(self._all_names_capitalised)
        self._exact = functools.lru_cache(maxsize=1 << 16)(self.db.link_probability)
        self._fame = functools.lru_cache(maxsize=1 << 16)(self._median_name_zipf)
        self._kind = functools.lru_cache(maxsize=1 << 16)(self._entity_kind)
        self._names = functools.lru_cache(maxsize=1 << 16)(self._names_in)
        self._home = functools.lru_cache(maxsize=1 << 16)(self._home_languages)

    def _entity_kind(self, key: str) -> str | None:
        entity = self.db.get(key)
        return None if entity is None else entity.kind

    def _names_in(self, key: str, lang: str) -> frozenset[str]:
        """``key``'s names in ``lang`` as written: label, titles without their qualifier, aliases."""
        entity = self.db.get(key)
        if entity is None:
            return frozenset()
        title = entity.titles.get(lang)
        plain = re.sub(r" \([^()]*\)$", "", title) if title else None
        return frozenset(n for n in (entity.labels.get(lang), title, plain, *entity.aliases.get(lang, ())) if n)

    def _median_name_zipf(self, key: str, lang: str) -> float:
        """The median, over the kb's other languages that have a word list and a one-word name of ``key``, of
        the highest Zipf frequency of its names there; 0.0 with fewer than three such languages."""
        found = []
        for other in self.db.languages:
            if other == lang or not has_frequencies(other):
                continue
            zs = [zipf(n, other) or 0.0 for n in self._names(key, other) if " " not in n]
            if zs:
                found.append(max(zs))
        if len(found) < 3:
            return 0.0
        found.sort()
        return found[len(found) // 2]

    def fame(self, key: str, lang: str) -> float:
        """How famous ``key`` is, seen from ``lang``: how frequent its names are in the word lists of the kb's
        other languages (median Zipf; :data:`FAMOUS_ZIPF` and above is famous). A place whose name is also a
        common word of ``lang`` (Reading, Nice, Essen) is frequent there for that word; the other languages
        write the place under its own names and show how often it is talked about."""
        return self._fame(key, lang)

    def _famous_as_written(self, m: Mention, lang: str) -> bool:
        """The best candidate is famous and the mention spells one of its names exactly (US, not Us)."""
        if not m.candidates:
            return False
        best = m.candidates[0].key
        return m.surface in self._names(best, lang) and self.fame(best, lang) >= FAMOUS_ZIPF

    def _all_names_capitalised(self, key: str, lang: str) -> bool:
        """Whether every name of ``key`` in ``lang`` (title, label, aliases) starts, in its first cased
        letter, with a capital; ``True`` when it has none that is cased."""
        entity = self.db.get(key)
        if entity is None:
            return True
        names = [entity.titles.get(lang), entity.labels.get(lang), *entity.aliases.get(lang, ())]
        firsts = [c for n in names if n for c in [_first_cased(n)] if c is not None]
        return all(c.isupper() for c in firsts)

    def fill(self, text: str, mentions: Sequence[Mention], lang: str) -> list[Mention]:
        """``mentions`` (as detected in ``text``) with their link probabilities: stored (for the exact spelling
        where the kb has it), else estimated."""
        starts, ends = {m.start for m in mentions}, {m.end for m in mentions}
        return [m._replace(link_probability=self._estimate(text, m, lang, starts, ends).value) for m in mentions]

    def estimate(self, text: str, mention: Mention, lang: str, spans: Sequence[tuple[int, int]] = ()) -> Estimate:
        """The link probability of ``mention`` in ``text``: stored, else by the rules of the module docs.

        ``spans``: every mention detected in the text (a neighbouring word that starts or ends one is a
        known name, not part of a longer unknown one).
        """
        return self._estimate(text, mention, lang, {a for a, _ in spans}, {b for _, b in spans})

    def _estimate(
        self, text: str, mention: Mention, lang: str, starts: Container[int], ends: Container[int]
    ) -> Estimate:
        if mention.link_probability is not None:
            exact = self._exact(lang, mention.surface)
            return Estimate(mention.link_probability if exact is None else exact, "anchors")
        surface = mention.surface
        first = _first_cased(surface)
        if first is None:
            segmented = unspaced.segmenter_verdict(text, mention, lang)
            if segmented == "name":
                return Estimate(LONGER_NAME, "part of a longer name")
            if segmented == "inside" or unspaced.inside_word(text, mention, lang):
                return Estimate(INSIDE_WORD, "inside a longer word")
            if unspaced.unspaced_person(text, mention, lang, starts, ends):
                return Estimate(LONGER_NAME, "part of a longer name")
            return Estimate(NO_CASE, "no case")
        if first.islower():
            if all(self._capitalised(c.key, lang) for c in mention.candidates):
                return Estimate(LOWERCASE, "lowercase")
            return self._by_frequency(surface, lang, NO_CASE, COMMON_NO_CASE, "lowercase name")
        if self._after_article(text, mention, lang):
            return Estimate(AFTER_ARTICLE, "after an article")
        if lang == "en" and _opens_compound(text, mention):
            return Estimate(INSIDE_WORD, "opens a noun compound")
        if self._in_longer_name(text, mention, lang, starts, ends):
            return Estimate(LONGER_NAME, "part of a longer name")
        if is_sentence_start(text, mention.start):
            if self._before_article(text, mention, lang):
                return Estimate(LONGER_NAME, "sentence start, before an article")
            where = self._common_word_place(mention, lang)
            if where is not None:
                return Estimate(LONGER_NAME, f"sentence start, common word for a place {where}")
            if lang == "ru" and not self._names_a_country(mention) and segmenters.russian_common_word(surface):
                return Estimate(LONGER_NAME, "sentence start, common word")
            found = self._by_frequency(surface, lang, CAPITALISED, SENTENCE_START_COMMON, "sentence start")
            if found.value == SENTENCE_START_COMMON and self._famous_as_written(mention, lang):
                return Estimate(CAPITALISED, "sentence start, famous name")
            return found
        return Estimate(CAPITALISED, "capitalised")

    def _before_article(self, text: str, m: Mention, lang: str) -> bool:
        """An article right after a sentence-opening mention ("Split the dough"), none of whose candidates is a
        country or continent."""
        articles = ARTICLES.get(lang)
        after = _WORD_AFTER.match(text, m.end)
        if not articles or after is None or after.group(1) not in articles:
            return False
        return not self._names_a_country(m)

    def _home_languages(self, key: str) -> frozenset[str]:
        """The official languages (P37) of ``key``'s countries (P17), or of ``key`` itself (a country)."""
        countries = self.db.objects(key, "P17") or [key]
        return frozenset(o.split(":", 1)[1] for c in countries for o in self.db.objects(c, "P37") if ":" in o)

    def _common_word_place(self, m: Mention, lang: str) -> str | None:
        """The mention's every candidate is a place abroad (none of its countries has ``lang`` as an official
        language) and the word is more frequent in ``lang`` than the place's fame explains
        (:data:`FOREIGN_WORD_GAP`), or a place at home and the word common (:data:`COMMON_ZIPF`) and far
        more frequent (:data:`HOME_WORD_GAP`): the language uses it for something else (Nice in English,
        Gerne in German; not Lyon in French, nor Hamburg in German, where home places are talked about more
        than abroad): ``"abroad"`` or ``"at home"`` (one candidate at home), else ``None``."""
        own = zipf(m.surface, lang)
        home = False
        if own is None or not _common(m.surface, lang) or not m.candidates:
            return None
        for c in m.candidates:
            if self._is_country(c.key):
                return None
            at_home = lang in self._home(c.key)
            if at_home and own < COMMON_ZIPF:
                return None
            if own - self.fame(c.key, lang) < (HOME_WORD_GAP if at_home else FOREIGN_WORD_GAP):
                return None
            home = home or at_home
        return "at home" if home else "abroad"

    def _is_country(self, key: str) -> bool:
        """A country or continent: names that take an article (*la* France) and are no common word."""
        return self._kind(key) in ("country", "continent")

    def _names_a_country(self, m: Mention) -> bool:
        return any(self._is_country(c.key) for c in m.candidates)

    def _after_article(self, text: str, m: Mention, lang: str) -> bool:
        """An article just before the mention, none of whose candidates is a country or continent."""
        articles = ARTICLES.get(lang)
        if not articles:
            return False
        before = _ARTICLE_BEFORE.search(text[max(0, m.start - 32) : m.start])
        if before is None or before.group(1).lower() not in articles:
            return False
        return not self._names_a_country(m)

    @staticmethod
    def _by_frequency(surface: str, lang: str, rare: float, common: float, reason: str) -> Estimate:
        z = zipf(surface, lang)
        if z is not None and z >= COMMON_ZIPF:
            return Estimate(common, f"{reason}, common word")
        return Estimate(rare, reason)

    @staticmethod
    def _in_longer_name(text: str, m: Mention, lang: str, starts: Container[int], ends: Container[int]) -> bool:
        """A capitalised word the kb did not match is glued to the mention by one space (see :data:`LONGER_NAME`).

        A preceding word that starts a sentence counts only when it looks like a first name (Michael Jordan;
        :func:`_name_like`), not a function word ("In Paris"), or when the mention is itself a first name (Götz
        George, Enner Valencia: a surname); a name particle and a capitalised word after the mention count
        too (Dominique de Villepin); in German (where every noun is capitalised) a
        common word does not count, unless before the mention it reads as a first name in the other languages'
        lists too (Jack London; not Stadt, Präsident, Heute).
        """
        after = _WORD_AFTER.match(text, m.end)
        if (
            after
            and _capital_word(after.group(1))
            and ((m.end + 1) not in starts or _first_name_before_name(m.surface, after.group(1)))
            and not (lang == "de" and _common(after.group(1), lang))
        ):
            return True
        if _before_particle(text, m, lang, starts):
            return True
        before = _WORD_BEFORE.search(text[max(0, m.start - 64) : m.start])
        if before:
            word = before.group(1)
            start = m.start - 1 - len(word)
            if (
                _capital_word(word)
                and (
                    not is_sentence_start(text, start)
                    or _name_like(word, lang)
                    or (is_first_name(m.surface) and (zipf(word, lang) or 0.0) < FUNCTION_ZIPF)
                )
                and ((m.start - 1) not in ends or _first_name_before_name(word, m.surface))
                and not (lang == "de" and _common(word, lang) and not _name_like(word, lang))
            ):
                return True
        return False


def _opens_compound(text: str, m: Mention) -> bool:
    """The one-word mention and the lowercase word after it are an English noun compound that is no place
    (:func:`kb.mentions.compounds.noun_compound`: Lima beans, Brussels sprouts); ``False`` without the data."""
    after = _WORD_AFTER.match(text, m.end)
    return after is not None and bool(compounds.noun_compound(m.surface, after.group(1)))


def _before_particle(text: str, m: Mention, lang: str, starts: Container[int]) -> bool:
    """A name particle and a capitalised word that no mention starts and that is no common word follow the
    mention (*Dominique* de Villepin, *Vincent* van Gogh): the mention opens a person's name (not "Berlin der
    Zukunft", "Paris de France")."""
    after = _PARTICLE_AFTER.match(text, m.end)
    return (
        after is not None
        and after.group(1) in NAME_PARTICLES
        and _capital_word(after.group(2))
        and after.start(2) not in starts
        and not _common(after.group(2), lang)
    )


def _first_name_before_name(first: str, second: str) -> bool:
    """Two capitalised kb names side by side make one person's name when the first is a first name and the
    second is not (*Irving* Berlin, *Sofia* Vergara; not Paris Jackson read backwards, nor two first names)."""
    return is_first_name(first) and not is_first_name(second)


def _capital_word(word: str) -> bool:
    first = _first_cased(word)
    return first is not None and first.isupper() and unicodedata.category(word[0])[0] == "L"


def _common(word: str, lang: str) -> bool:
    z = zipf(word, lang)
    return z is not None and z >= 4.0


def _name_like(word: str, lang: str) -> bool:
    """Whether ``word``, opening a sentence, reads as a first name rather than a function word: not among the
    most frequent words of ``lang`` (:data:`FUNCTION_ZIPF`) and a first name of ``nomquamgender``'s data
    (:func:`is_first_name`: Whitney, Joaquin, Сергей) or, for the Latin script, frequent in the other
    languages' lists too (:data:`NAME_ZIPF`: Michael, Victoria, Jack; not Near, Today, Yesterday); in other
    scripts, not a common word (Zipf < 5.0)."""
    own = zipf(word, lang)
    if own is None:
        return False
    if own >= FUNCTION_ZIPF:
        return False
    if is_first_name(word):
        return True
    if word.isascii() or lang in _LATIN_PEERS:
        peers = sorted(zipf(word, p) or 0.0 for p in _LATIN_PEERS if p != lang)
        return peers[len(peers) // 2] >= NAME_ZIPF
    return own < COMMON_ZIPF
