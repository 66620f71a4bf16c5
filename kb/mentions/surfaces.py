"""Surface forms: the normalisation and script rules shared by mention matching at build and query time.

A kb name and a stretch of text match when their *matching units* are equal. Both
sides go through the same three steps, so building an index and detecting mentions
can never disagree:

1. **Fold** (:func:`fold`): Unicode NFKC, full case folding, NFKC again. Full-width
   letters become ASCII, ligatures split (``ﬁ`` -> ``fi``), ``ß`` -> ``ss``, Greek
   final sigma -> sigma; scripts without case are unchanged. The Turkish dotted and
   dotless i (``İ``, ``ı``) fold to ``i`` in every language, so ``İstanbul``,
   ``Istanbul`` and ``ISTANBUL`` match whatever the text's language.
2. **Tokens** (:func:`tokenize`), decided by each character's script, not by the
   text's language, so mixed-script text behaves the same in every language:

   - words of space-delimited scripts (Latin, Cyrillic, Greek, Arabic, Devanagari,
     Bengali, Telugu, ...: letters, digits and their combining marks) are one token,
     so a match starts and ends at word boundaries (``Paris`` is not found in
     ``Parisian``);
   - each character of a script written without spaces (Han, Hiragana, Katakana,
     Thai, Lao, Khmer, Myanmar, Tibetan, Bopomofo), with its combining marks, is one
     token, so ``東京`` is found in ``東京都に``;
   - Hangul words are tokens, but matching splits them into syllables and requires
     only the *start* of a word (Korean particles attach to the noun: ``서울`` is
     found in ``서울에서``, never inside ``대서울``);
   - any other non-space character (punctuation, symbols) is a token of its own;
     whitespace only separates tokens, so ``AT&T`` and ``AT & T`` are the same name.
3. **Offsets**: NFKC and case folding change lengths (``ﬁ`` -> 2 characters,
   ``ｶﾞ`` -> 1, ``İ`` -> 1 here but 2 in plain ``str.casefold``). :func:`fold_aligned`
   folds a text segment by segment (a base character and the marks that attach to
   it) and keeps, for every folded character, where its segment starts in the
   original, so spans found in the folded text map back to exact spans of the
   original text; a span that would cut a segment in two is not a valid match.

:func:`surface_key` gives the canonical text of a name (tokens joined by one space
between two words, directly otherwise): equal keys mean equal matching units.
"""

from __future__ import annotations

import array
import functools
import re
import unicodedata
from dataclasses import dataclass, field
from itertools import accumulate

#: Marks the first syllable of a Hangul word among matching units.
WORD_START = "^"

_TURKISH_I = str.maketrans({"İ": "i", "ı": "i"})


def fold(text: str) -> str:
    """The matching form of ``text``: NFKC, case folding (``İ``/``ı`` -> ``i``), NFKC.

    >>> fold("Ｔｏｋｙｏ ﬁlm Straße İstanbul")
    'tokyo film strasse istanbul'
    """
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", text).translate(_TURKISH_I)
    return unicodedata.normalize("NFKC", text.casefold())


# -- character classes, computed once from the Unicode database of the running Python -------------
_UNSPACED_SCRIPTS = (
    r"\p{scx=Han}\p{scx=Hira}\p{scx=Kana}\p{scx=Bopo}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmr}\p{sc=Mymr}\p{sc=Tibt}"
)
_LETTERS = r"[\p{L}\p{N}]"
_PROPERTIES = {
    "unspaced": rf"[[{_UNSPACED_SCRIPTS}]&&{_LETTERS}]",  # letters and digits written without spaces
    "hangul": rf"[\p{{sc=Hang}}&&{_LETTERS}]",  # Hangul letters
    "word": rf"[{_LETTERS}--[{_UNSPACED_SCRIPTS}\p{{sc=Hang}}]]",  # letters and digits of every other script
    "mark": r"[\p{M}\p{Join_Control}]",  # marks and (non-)joiners stay inside words
    "attach": r"[\p{NFC_QC=M}\p{NFKC_QC=M}[^\p{ccc=0}]]",  # NFKC may merge these into the previous one
}
_SUPPLEMENTARY = r"(?=[\U00010000-\U0010ffff])"


@functools.cache
def _classes() -> dict[str, tuple[str, str]]:
    """``{name: (BMP ranges, supplementary ranges)}`` as ``re`` class contents.

    ``regex`` reads the Unicode script and normalisation properties once; the
    stdlib ``re`` does the run-time work, ~5x faster. Classes are split at the
    BMP because ``re`` tests a BMP-only class in constant time but scans a
    class with supplementary ranges one range at a time.
    """
    import regex

    all_chars = array.array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")
    out = {}
    for name, prop in _PROPERTIES.items():
        parts = ["", ""]
        for m in regex.finditer(prop + "+", all_chars, flags=regex.V1):
            a, b = m.start(), m.end() - 1
            for plane, lo, hi in ((0, a, min(b, 0xFFFF)), (1, max(a, 0x10000), b)):
                if lo <= hi:
                    parts[plane] += re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        out[name] = (parts[0], parts[1])
    return out


@functools.cache
def _token_re() -> re.Pattern[str]:
    c = _classes()
    (w, ws), (u, us), (h, _), (m, ms) = c["word"], c["unspaced"], c["hangul"], c["mark"]
    sup = _SUPPLEMENTARY
    # Most frequent shapes first; supplementary-plane characters (rare) only behind a cheap look-ahead.
    return re.compile(
        rf"([{w}][{w}{m}]*+(?:{sup}[{ws}{ms}][{w}{m}]*+)*+"  # a word of a space-delimited script
        rf"|[{u}][{m}]*+(?:{sup}[{ms}])*+"  # one character of an unspaced script
        rf"|[{h}][{h}{m}]*+(?:{sup}[{ms}][{h}{m}]*+)*+"  # a Hangul word
        rf"|{sup}[{ws}](?:[{w}{m}]|{sup}[{ws}{ms}])*+"
        rf"|{sup}[{us}](?:[{m}]|{sup}[{ms}])*+"
        r"|\S)"  # anything else but space
    )


def class_re(*names: str) -> re.Pattern[str]:
    c = _classes()
    bmp = "".join(c[n][0] for n in names)
    supp = "".join(c[n][1] for n in names)
    return re.compile(f"[{bmp}]|{_SUPPLEMENTARY}[{supp}]" if supp else f"[{bmp}]")


@functools.cache
def _word_start_re() -> re.Pattern[str]:
    """A token that is a word (joined to a neighbouring word by a space in keys)."""
    return class_re("word", "hangul")


@functools.cache
def _hangul_re() -> re.Pattern[str]:
    return class_re("hangul")


@functools.cache
def _attach_re() -> re.Pattern[str]:
    return class_re("attach")


# -- folding with offsets ---------------------------------------------------------------------------
_SIMPLE: dict[str, bool] = {}


def _attaches(ch: str) -> bool:
    """True if NFKC may merge ``ch`` (or the start of its decomposition) into the character before."""
    if _attach_re().match(ch):
        return True
    nfkd = unicodedata.normalize("NFKD", ch)
    return bool(nfkd) and nfkd[0] != ch and _attach_re().match(nfkd[0]) is not None


def _is_simple(ch: str) -> bool:
    """A character that folds to exactly one character, independently of its neighbours."""
    simple = _SIMPLE.get(ch)
    if simple is None:
        folded = fold(ch)
        simple = len(folded) == 1 and not _attaches(ch) and not _attaches(folded)
        _SIMPLE[ch] = simple
    return simple


@functools.lru_cache(maxsize=4096)
def _segment_re(attach: str, odd: str) -> re.Pattern[str]:
    """Segments that cannot be folded character by character: a base with attaching marks, or an odd character."""
    odd_class = f"[{re.escape(odd)}]"
    if attach:
        return re.compile(f".[{re.escape(attach)}]+|{odd_class}", re.DOTALL)
    return re.compile(odd_class, re.DOTALL)


@dataclass(frozen=True)
class Folded:
    """A text, its folded form, and the map from folded offsets back to the original.

    ``starts[i]`` is where the segment of folded character ``i`` starts in the
    original (``starts[len(folded)] == len(text)``); ``None`` means the identity.
    ``inner`` holds folded offsets that fall inside a segment.
    """

    text: str
    folded: str
    starts: list[int] | None = None
    inner: frozenset[int] = field(default_factory=frozenset)

    def original_span(self, start: int, end: int) -> tuple[int, int] | None:
        """The original span of folded ``[start, end)``, or ``None`` if it cuts a segment."""
        if self.starts is None:
            return start, end
        if start in self.inner or end in self.inner:
            return None
        return self.starts[start], self.starts[end]


def fold_aligned(text: str) -> Folded:
    """Fold ``text`` (see :func:`fold`) and keep the offsets back to the original.

    >>> f = fold_aligned("ﬁne İzmir")
    >>> f.folded, f.original_span(5, 10)
    ('fine izmir', (4, 9))
    """
    if text.isascii():
        return Folded(text, text.lower())
    chars = set(text)
    odd = "".join(sorted(c for c in chars if not c.isascii() and not _is_simple(c)))
    if not odd:
        return Folded(text, fold(text))
    attach = "".join(c for c in odd if _attaches(c))
    pieces: list[str] = []
    starts: list[int] = []
    inner: set[int] = set()
    pos = out = 0
    for m in _segment_re(attach, odd).finditer(text):
        s, e = m.span()
        if s > pos:  # characters that fold one to one
            run = fold(text[pos:s])
            pieces.append(run)
            starts.extend(range(pos, s))
            out += len(run)
        seg = fold(text[s:e])
        pieces.append(seg)
        starts.extend([s] * len(seg))
        inner.update(range(out + 1, out + len(seg)))
        out += len(seg)
        pos = e
    if pos < len(text):
        run = fold(text[pos:])
        pieces.append(run)
        starts.extend(range(pos, len(text)))
    starts.append(len(text))
    return Folded(text, "".join(pieces), starts, frozenset(inner))


# -- tokens, keys and matching units --------------------------------------------------------------------
def tokenize(folded: str) -> list[str]:
    """Tokens of an already folded string (see the module docstring for the script rules).

    >>> tokenize("東京タワーはtokyo towerです")
    ['東', '京', 'タ', 'ワ', 'ー', 'は', 'tokyo', 'tower', 'で', 'す']
    """
    return _token_re().split(folded)[1::2]


_ASCII_TOKEN_RE = re.compile(r"([a-z0-9]+|\S)")  # the same tokens for folded ASCII text, faster


def token_bounds(folded: str) -> tuple[list[str], list[int]]:
    """Tokens of a folded string and their bounds: token ``i`` is ``folded[bounds[2i]:bounds[2i + 1]]``."""
    parts = (_ASCII_TOKEN_RE if folded.isascii() else _token_re()).split(folded)
    return parts[1::2], list(accumulate(map(len, parts)))


def token_spans(folded: str) -> tuple[list[str], list[int], list[int]]:
    """Tokens of a folded string with their start and end offsets in it."""
    tokens, bounds = token_bounds(folded)
    return tokens, bounds[0:-1:2], bounds[1::2]


def join_tokens(tokens: list[str]) -> str:
    """Canonical text of a token sequence: one space between two words, nothing otherwise."""
    if len(tokens) < 2:
        return tokens[0] if tokens else ""
    is_word = _word_start_re().match
    out = [tokens[0]]
    prev_word = is_word(tokens[0]) is not None
    for tok in tokens[1:]:
        word = is_word(tok) is not None
        if word and prev_word:
            out.append(" ")
        out.append(tok)
        prev_word = word
    return "".join(out)


def surface_key(text: str) -> str:
    """The canonical folded form of a name; two names match the same text iff their keys are equal.

    >>> surface_key("  AT & T "), surface_key("Ｔｏｋｙｏ  Tower"), surface_key("東京 タワー")
    ('at&t', 'tokyo tower', '東京タワー')
    """
    return join_tokens(tokenize(fold(text)))


def has_hangul(folded: str) -> bool:
    return not folded.isascii() and _hangul_re().search(folded) is not None


def split_hangul(tokens: list[str], bounds: list[int]) -> tuple[list[str], list[int]]:
    """Matching units: Hangul words become syllables, the first one marked with :data:`WORD_START`.

    Other tokens are units as they are. ``bounds`` (as from :func:`token_bounds`) follow the units.
    """
    is_hangul = _hangul_re().match
    units: list[str] = []
    unit_bounds: list[int] = []
    for i, tok in enumerate(tokens):
        start = bounds[2 * i]
        if is_hangul(tok) is None:
            units.append(tok)
            unit_bounds += (start, bounds[2 * i + 1])
            continue
        for j, ch in enumerate(tok):
            units.append(WORD_START + ch if j == 0 else ch)
            unit_bounds += (start + j, start + j + 1)
    return units, unit_bounds


def matching_units(key: str) -> list[str]:
    """The matching units of a surface key (see :func:`surface_key`)."""
    tokens = tokenize(key)
    if not has_hangul(key):
        return tokens
    return split_hangul(tokens, [0] * (2 * len(tokens)))[0]


def safe_cut(text: str, limit: int, window: int = 1024) -> int:
    """A position at or before ``limit`` where ``text`` can be cut without splitting a token or a segment.

    Prefers whitespace; else a point between two characters that are not both
    letters of a space-delimited script, before a character that does not attach
    to the previous one; ``limit`` itself if the window has neither.
    """
    low = max(1, limit - window)
    for i in range(limit, low - 1, -1):
        if text[i].isspace():
            return i
    is_word = _word_start_re().match
    for i in range(limit, low - 1, -1):
        if (
            not _attaches(text[i])
            and unicodedata.category(text[i])[0] != "M"
            and not (is_word(text[i]) and is_word(text[i - 1]))
        ):
            return i
    return limit
