"""Matching units of many texts at once: the vectorised path of ``MentionIndex.detect_batch``.

For texts whose folded form has the same offsets as the original and holds only
BMP characters and no Hangul (every ASCII text, and most text in Latin,
Cyrillic, Greek, Arabic, Indic, Han, kana or Thai script), the whole batch is cut
into units exactly as :func:`kb.mentions.surfaces.token_bounds` cuts one text, and every
unit fingerprinted, in a few numpy passes over the code points; the units are
then looked up in the fingerprints of the index's units: no Python object is
made per unit, which is what the per-text path spends most of its time on.

A fingerprint is the unit's length and two 64-bit polynomial hashes with
different odd bases (wrapping arithmetic). A unit of the text is taken for a kb
unit when all three agree, and the units of every match are then compared
character by character (:meth:`UnitTable.same`), so a collision can never give
a wrong mention. If two kb units of a language share a first hash,
:meth:`UnitTable.build` declines and callers use the per-text path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

import numpy as np

from kb.mentions.surfaces import class_re, token_bounds

_BASES = (0x100000001B3, 0x9E3779B97F4A7C15)  # odd, so invertible modulo 2**64
_MIX = 0xD6E8FEB86659FD93  # odd multiplier that spreads a hash over the top bits
# Character classes. OTHER: a unit on its own; UNSPACED: a unit with the marks that follow it (MARK_ON_UNSPACED).
OTHER, WORD, UNSPACED, HANGUL, MARK, SPACE, MARK_ON_UNSPACED = range(7)


@cache
def ascii_classes() -> np.ndarray:
    """Class of each ASCII character for folded ASCII text, asked of the tokenizer itself: a character
    twice is no unit (a space), one unit (a word character) or two (a unit on its own)."""
    return np.array([(SPACE, WORD, OTHER)[len(token_bounds(chr(c) * 2)[0])] for c in range(128)], np.uint8)


@cache
def bmp_classes() -> np.ndarray:
    """Class of each BMP character for other folded text, from the tokenizer's own character classes."""
    bmp = "".join(map(chr, range(0x10000)))
    out = np.full(0x10000, OTHER, np.uint8)
    for pattern, cls in (
        (re.compile(r"\s"), SPACE),
        (class_re("word"), WORD),
        (class_re("unspaced"), UNSPACED),
        (class_re("hangul"), HANGUL),
        (class_re("mark"), MARK),
    ):
        out[[m.start() for m in pattern.finditer(bmp)]] = cls
    return out


def _inverse(base: int) -> int:
    return pow(base, -1, 1 << 64)


class _Powers:
    """``base ** k`` and ``base ** -k`` modulo 2**64 for k < n, grown on demand."""

    def __init__(self) -> None:
        self.n = 0
        self.up: list[np.ndarray] = []
        self.down: list[np.ndarray] = []

    def get(self, n: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        if n > self.n:
            size = max(n, 2 * self.n, 1 << 12)
            self.up, self.down = [], []
            for base in _BASES:
                for b, out in ((base, self.up), (_inverse(base), self.down)):
                    steps = np.full(size, b, np.uint64)
                    steps[0] = 1
                    out.append(np.cumprod(steps, dtype=np.uint64))
            self.n = size
        return self.up, self.down


def _fingerprints(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, powers: _Powers) -> list[np.ndarray]:
    """The two hashes of ``buf[starts[i]:ends[i]]`` for every i: sum of c_k * base**(k - start)."""
    up, down = powers.get(len(buf) + 1)
    out = []
    values = buf.astype(np.uint64)
    with np.errstate(over="ignore"):
        for p, q in zip(up, down):
            prefix = np.zeros(len(buf) + 1, np.uint64)
            np.cumsum(values * p[: len(buf)], out=prefix[1:])
            out.append((prefix[ends] - prefix[starts]) * q[starts])
    return out


def cut(codes: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of the units of folded text (code points), as ``token_bounds`` gives them.

    The token rules: a word is a letter or digit of a space-delimited script
    followed by more of them and marks; an unspaced-script character is a unit
    with the marks after it; any other non-space character (a mark with no
    letter before it too) is a unit of its own. ``classes``: :func:`ascii_classes`
    or :func:`bmp_classes` (Hangul is not handled here).
    """
    cls = classes[codes]
    marks = cls == MARK
    if marks.any():  # a mark belongs to the letter before it, if any
        n = len(cls)
        anchor = np.maximum.accumulate(np.where(marks, -1, np.arange(n)))
        before = np.where(anchor >= 0, cls[np.maximum(anchor, 0)], OTHER)
        cls = cls.copy()
        cls[marks] = np.select([before[marks] == WORD, before[marks] == UNSPACED], [WORD, MARK_ON_UNSPACED], OTHER)
    word = cls == WORD
    prev_word = np.zeros_like(word)
    prev_word[1:] = word[:-1]
    first = (word & ~prev_word) | (cls == OTHER) | (cls == UNSPACED)
    starts = np.flatnonzero(first)
    bounds = np.flatnonzero(first | (cls == SPACE))
    bounds = np.append(bounds, len(cls))
    ends = bounds[np.searchsorted(bounds, starts, side="right")]
    return starts, ends


class UnitTable:
    """The units of one language, by fingerprint (see the module docs), in a linear-probing hash table."""

    def __init__(
        self,
        h1: np.ndarray,
        h2: np.ndarray,
        lengths: np.ndarray,
        ids: np.ndarray,
        chars: np.ndarray,
        offsets: np.ndarray,
    ) -> None:
        self.h2, self.lengths, self.ids = h2, lengths, ids
        self.chars, self.offsets = chars, offsets  # unit id -> its characters: chars[offsets[id]:][:length]
        self.powers = _Powers()
        n = len(h1)
        self.bits = max(4, (4 * n).bit_length())  # at most a quarter full: short probes
        home = self._home(h1)
        order = np.argsort(home, kind="stable")
        # linear probing, filled in order of home slot: each unit takes the first free slot from its home on
        # (a running maximum), so the slots between a unit's home and its own are all taken, as lookups assume
        slots = np.maximum.accumulate(home[order] - np.arange(n)) + np.arange(n) if n else home
        # (first hash, row) per slot, side by side: a probe costs one memory access; row -1: empty
        # every home slot exists, and one empty slot follows the last taken one
        size = max(1 << self.bits, int(slots[-1]) + 1 if n else 0) + 1
        self.slots = np.zeros(size, [("h1", np.uint64), ("row", np.int64)])
        self.slots["row"] = -1
        self.slots["h1"][slots] = h1[order]
        self.slots["row"][slots] = order
        self.max_probe = int((slots - home[order]).max()) if n else 0

    def _home(self, h: np.ndarray) -> np.ndarray:
        """Slot of a first hash: its top bits after a multiplicative mix (a one-character unit's hash is its code)."""
        with np.errstate(over="ignore"):
            return ((h * np.uint64(_MIX)) >> np.uint64(64 - self.bits)).astype(np.int64)

    @classmethod
    def build(cls, units: Sequence[str]) -> UnitTable | None:
        """From the language's units in id order (those of the BMP); ``None`` if two share a first hash."""
        ids = np.array([i for i, u in enumerate(units) if u.isascii() or max(u) <= "\uffff"], np.int64)
        chosen = [units[i] for i in ids]
        lengths = np.fromiter(map(len, chosen), np.int64, len(chosen))
        buf = np.frombuffer("".join(chosen).encode("utf-32-le"), np.uint32)
        ends = np.cumsum(lengths)
        h1, h2 = _fingerprints(buf, ends - lengths, ends, _Powers())
        if len(np.unique(h1)) < len(h1):
            return None
        offsets = np.full(len(units), -1, np.int64)
        offsets[ids] = ends - lengths
        return cls(h1, h2, lengths, ids, buf, offsets)

    def lookup(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Unit id of every unit ``buf[starts[i]:ends[i]]``, -1 where the language has no such unit."""
        h1, h2 = _fingerprints(buf, starts, ends, self.powers)
        out = np.full(len(starts), -1, np.int64)
        active = np.arange(len(starts))
        slot = self._home(h1)
        for _ in range(self.max_probe + 1):
            probe = self.slots[slot]
            row = probe["row"]
            hit = (probe["h1"] == h1[active]) & (row >= 0)
            out[active[hit]] = row[hit]
            more = (row >= 0) & ~hit
            if not more.any():
                break
            active, slot = active[more], slot[more] + 1
        found = np.flatnonzero(out >= 0)
        rows = out[found]
        same = (self.h2[rows] == h2[found]) & (self.lengths[rows] == (ends - starts)[found])
        out[found] = np.where(same, self.ids[rows], -1)
        return out

    def same(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Whether each ``buf[starts[i]:ends[i]]`` is, character for character, unit ``ids[i]`` (of equal length)."""
        lengths = ends - starts
        within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        differ = buf[np.repeat(starts, lengths) + within] != self.chars[np.repeat(self.offsets[ids], lengths) + within]
        ok = np.ones(len(starts), bool)
        ok[np.repeat(np.arange(len(starts)), lengths)[differ]] = False
        return ok
