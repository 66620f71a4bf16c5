"""One language's compiled surface forms, and matching text against them.

A language is an Aho-Corasick automaton (``daachorse``) over two-character unit
codes, the list of its units, and flat arrays of link probabilities and
candidates per surface (see :mod:`kb.mentions.index` for why). This module
holds the loaded form (:class:`CompiledLanguage`), the builder
(:class:`LanguageBuilder`), the :class:`Mention` result type, and the matching:
one text at a time (:func:`detect_in`) or a batch together
(:func:`detect_together`, vectorised with :mod:`kb.mentions.units`).

How matching works (see :mod:`kb.mentions.surfaces` for normalisation and the script rules):
text is folded and cut into *matching units* (words of space-delimited scripts,
single characters of Han, kana, Thai..., Hangul syllables); every distinct unit
of the kb gets a two-character code, so a surface form becomes a string of 2-20
code characters and the text a string of 2 characters per unit. One
Aho-Corasick search with leftmost-longest semantics over the code string then
finds every mention in a single C call; matches can only start and end on unit
boundaries, so word boundaries and the Korean word-start rule hold by
construction, and offsets map back to the original text.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, repeat
from math import isnan
from typing import TYPE_CHECKING, Any, NamedTuple

import daachorse
import numpy as np

from kb.errors import InputFormatError, MlukeError
from kb.mentions.candidates import Candidate
from kb.mentions.surfaces import (
    Folded,
    fold,
    fold_aligned,
    has_hangul,
    matching_units,
    split_hangul,
    surface_key,
    token_bounds,
)
from kb.mentions.units import UnitTable, ascii_classes, bmp_classes, cut

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject

_LEAD, _TRAIL, _RADIX = 0x1000, 0x2000, 4096  # unit code = lead char + trail char
_MAX_UNITS = _RADIX * _RADIX
_UNKNOWN = "\x00\x00"  # a unit no surface contains
_CACHE_LIMIT = 200_000  # candidate tuples kept per language
# name -> array typecode of the per-language arrays (all little-endian on disk).
ARRAY_TYPES = {"link_probability": "d", "offsets": "q", "entities": "i", "counts": "q", "priors": "d", "sources": "B"}


def _array(typecode: str, data: bytes) -> array.array[int]:
    """An array from little-endian bytes."""
    arr = array.array(typecode)
    arr.frombytes(data)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr


def array_view(typecode: str, data: bytes) -> Any:
    """Read-only indexable view of little-endian bytes (no copy on little-endian machines)."""
    if sys.byteorder == "little":
        view: Any = memoryview(data)  # typeshed wants a literal type code
        return view.cast(typecode)
    return _array(typecode, data)


def le_bytes(arr: array.array[int]) -> bytes:
    if sys.byteorder != "little":
        arr = array.array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def _code(i: int) -> str:
    return chr(_LEAD + i // _RADIX) + chr(_TRAIL + i % _RADIX)


class Mention(NamedTuple):
    """A kb surface form found in a text (an immutable named tuple, like :class:`Candidate`).

    ``start``/``end`` are character offsets in the original text and ``surface``
    is ``text[start:end]``. ``link_probability`` is ``None`` when the kb has no
    statistics for the surface. ``candidates`` are the top 30 entities by prior
    p(e|m), best first.
    """

    start: int
    end: int
    surface: str
    link_probability: float | None
    candidates: tuple[Candidate, ...]

    @property
    def nil_prior(self) -> float | None:
        """Prior that the surface is not a link at all (1 - link probability; ``None`` if unknown)."""
        return None if self.link_probability is None else 1.0 - self.link_probability

    def to_dict(self) -> JsonObject:
        """A JSON-ready dict (candidates as dicts)."""
        return {
            "start": self.start,
            "end": self.end,
            "surface": self.surface,
            "link_probability": self.link_probability,
            "candidates": [c._asdict() for c in self.candidates],
        }


_new_mention = tuple.__new__  # Mention(...) without the Python-level __new__ of named tuples


class CompiledLanguage:
    """The loaded data of one language: the automaton, the unit codes and zero-copy views of the arrays."""

    def __init__(
        self, read: Callable[[str], bytes], entity_key: Callable[[int], str], sources: Sequence[str], max_chars: int
    ) -> None:
        # One blob at a time, so that peak memory holds the serialised automaton only while it is decoded.
        self.automaton = daachorse.CharwiseDoubleArrayAhoCorasick.deserialize(read("automaton"))
        units = read("units").decode("utf-8")
        units_list = units.split("\n") if units else []
        self.codes = dict(zip(units_list, map(_code, range(len(units_list)))))
        self.units = units_list
        self._table: UnitTable | bool | None = False  # False: not built yet
        arrays = {name: array_view(typecode, read(name)) for name, typecode in ARRAY_TYPES.items()}
        self.lp, self.offsets = arrays["link_probability"], arrays["offsets"]
        self.lp_array = np.asarray(self.lp, np.float64)  # the same numbers, for numpy gathers (no copy here)
        self.entities, self.counts, self.priors, self.sources = (
            arrays["entities"],
            arrays["counts"],
            arrays["priors"],
            arrays["sources"],
        )
        self.entity_key = entity_key
        self.source_names = list(sources)
        self.overlap = max(1024, 4 * max_chars)
        self.cache: dict[int, tuple[Candidate, ...]] = {}

    def candidates(self, pid: int) -> tuple[Candidate, ...]:
        found = self.cache.get(pid)
        if found is None:
            if len(self.cache) >= _CACHE_LIMIT:
                self.cache.clear()
            key, names = self.entity_key, self.source_names
            ents, counts, priors, sources = self.entities, self.counts, self.priors, self.sources
            found = tuple(
                Candidate(key(ents[i]), priors[i], counts[i], names[sources[i]])
                for i in range(self.offsets[pid], self.offsets[pid + 1])
            )
            self.cache[pid] = found
        return found

    def unit_table(self) -> UnitTable | None:
        """The vectorised lookup of this language's units (built on first use; ``None``: unusable)."""
        if self._table is False:
            self._table = UnitTable.build(self.units)
        return self._table  # type: ignore[return-value]

    def pattern_id(self, surface: str) -> int | None:
        units = matching_units(surface_key(surface))
        if not units:
            return None
        codes = "".join(map(self.codes.get, units, repeat(_UNKNOWN)))
        if _UNKNOWN in codes[::2]:
            return None
        found = self.automaton.find(codes)
        if found and found[0][0] == 0 and found[0][1] == len(codes):
            return found[0][2]
        return None


class LanguageBuilder:
    """Accumulates the surfaces of one language in compact arrays (units numbered in order of appearance)."""

    def __init__(self) -> None:
        self.unit_ids: dict[str, int] = {}
        self.pattern_units = array.array("i")
        self.pattern_ends = array.array("q")
        self.arrays: dict[str, array.array[Any]] = {name: array.array(t) for name, t in ARRAY_TYPES.items()}
        self.arrays["offsets"].append(0)
        self.max_chars = 0

    def add(
        self,
        key: str,
        candidates: Sequence[Candidate],
        lp: float | None,
        entity_id: Callable[[str], int],
        source_id: Callable[[str], int],
    ) -> None:
        if fold(key) != key:
            raise InputFormatError(
                f"surface key {key!r} is not folded: sources must list kb.mentions.surfaces.surface_key() forms"
            )
        units = matching_units(key)
        if not units:
            return
        ids = self.unit_ids
        self.pattern_units.extend([ids.setdefault(u, len(ids)) for u in units])
        self.pattern_ends.append(len(self.pattern_units))
        a = self.arrays
        a["link_probability"].append(float("nan") if lp is None else lp)
        a["entities"].extend([entity_id(c.key) for c in candidates])
        a["counts"].extend([c.count for c in candidates])
        a["priors"].extend([c.prior for c in candidates])
        a["sources"].extend([source_id(c.source) for c in candidates])
        a["offsets"].append(len(a["entities"]))
        self.max_chars = max(self.max_chars, len(key))

    def finish(self) -> dict[str, bytes]:
        if len(self.unit_ids) > _MAX_UNITS:
            raise MlukeError(
                f"{len(self.unit_ids):,} distinct words in one language; an index holds at most {_MAX_UNITS:,}"
            )
        codes = "".join(map(_code, range(len(self.unit_ids))))
        all_codes = "".join([codes[2 * u : 2 * u + 2] for u in self.pattern_units])
        patterns = []
        start = 0
        for end in self.pattern_ends:
            patterns.append(all_codes[2 * start : 2 * end])
            start = end
        automaton = daachorse.CharwiseDoubleArrayAhoCorasick(patterns, daachorse.MATCH_KIND_LEFTMOST_LONGEST)
        blobs = {"automaton": automaton.serialize(), "units": "\n".join(self.unit_ids).encode("utf-8")}
        for name, arr in self.arrays.items():
            blobs[name] = le_bytes(arr)
        return blobs


def detect_in(
    idx: CompiledLanguage, text: str, base: int, threshold: float | None, folded: Folded | None = None
) -> list[Mention]:
    """The mentions of ``text`` (offsets shifted by ``base``) with link probability at least ``threshold``."""
    if folded is None:
        folded = fold_aligned(text)
    units, bounds = token_bounds(folded.folded)
    if not units:
        return []
    if has_hangul(folded.folded):
        units, bounds = split_hangul(units, bounds)
    codes = "".join(map(idx.codes.get, units, repeat(_UNKNOWN)))
    # Unit i is codes[2i:2i + 2] and folded[bounds[2i]:bounds[2i + 1]], so a match [s, e) of
    # the code string spans folded[bounds[s]:bounds[e - 1]].
    matches = idx.automaton.find(codes)
    lps, cached, candidates = idx.lp, idx.cache.get, idx.candidates
    if folded.starts is None and threshold is None and not base:  # the common case, in one comprehension
        return [
            _new_mention(
                Mention,
                (
                    bounds[s],
                    bounds[e - 1],
                    text[bounds[s] : bounds[e - 1]],
                    None if isnan(lp := lps[pid]) else lp,
                    cached(pid) or candidates(pid),
                ),
            )
            for s, e, pid in matches
        ]
    out: list[Mention] = []
    for s, e, pid in matches:
        span = folded.original_span(bounds[s], bounds[e - 1])
        lp = lps[pid]
        if span is None or (threshold is not None and lp < threshold):
            break  # rare: fall back to the careful scan from here
        out.append(
            Mention(
                span[0] + base,
                span[1] + base,
                text[span[0] : span[1]],
                None if isnan(lp) else lp,
                cached(pid) or candidates(pid),
            )
        )
    else:
        return out

    def accept(s: int, e: int, pid: int) -> tuple[int, int] | None:
        span = folded.original_span(bounds[s], bounds[e - 1])
        return None if span is None or (threshold is not None and lps[pid] < threshold) else span

    for (a, b), pid in _scan(idx.automaton, codes, s, accept):
        lp = lps[pid]
        out.append(Mention(a + base, b + base, text[a:b], None if isnan(lp) else lp, candidates(pid)))
    return out


def detect_together(
    idx: CompiledLanguage,
    table: UnitTable,
    ascii_: bool,
    texts: Sequence[str],
    which: list[int],
    folds: list[str],
    out: list[list[Mention]],
    one: Callable[[str], list[Mention]],
) -> None:
    """:meth:`MentionIndex.detect` of the texts ``texts[i]`` for i in ``which`` (folded: ``folds``), all at once.

    The same matches as one text at a time: the texts' units are cut and looked
    up together (:mod:`kb.mentions.units`; ASCII texts by the ASCII token rules, as
    :func:`kb.mentions.surfaces.token_bounds` does), coded as in
    :func:`detect_in` with an unknown unit between two texts, so no
    match spans texts, and searched in one automaton call. Results go to ``out``.
    """
    chosen = [texts[i] for i in which]
    joined = "\n".join(chosen)
    buf = np.frombuffer("\n".join(folds).encode("utf-32-le", "surrogatepass"), np.uint32)
    starts, ends = cut(buf, ascii_classes() if ascii_ else bmp_classes())
    ids = table.lookup(buf, starts, ends)
    bases = np.zeros(len(chosen), np.int64)
    np.cumsum(np.fromiter(map(len, chosen), np.int64, len(chosen))[:-1] + 1, out=bases[1:])
    text_of = np.searchsorted(bases, starts, side="right") - 1
    pos = np.arange(len(starts)) + text_of  # unit i of the batch, after one separator per earlier text
    code = np.zeros(2 * (len(starts) + len(chosen)), np.uint32)  # zeros: _UNKNOWN
    known = pos[ids >= 0]
    code[2 * known] = _LEAD + ids[ids >= 0] // _RADIX
    code[2 * known + 1] = _TRAIL + ids[ids >= 0] % _RADIX
    matches = idx.automaton.find(code.tobytes().decode("utf-32-le"))
    if not matches:
        return
    found = np.fromiter(chain.from_iterable(matches), np.int64, 3 * len(matches)).reshape(-1, 3)
    unit_at = np.zeros(len(code) // 2, np.int64)
    unit_at[pos] = np.arange(len(starts))
    first, last = unit_at[found[:, 0] // 2], unit_at[found[:, 1] // 2 - 1]
    t = text_of[first]
    # every unit of every match, compared character by character: a hash collision sends its text the slow way
    counts = last - first + 1
    inside = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    wrong = ~table.same(buf, starts[inside], ends[inside], ids[inside])
    redo = np.unique(np.repeat(t, counts)[wrong]).tolist() if wrong.any() else []
    if redo:
        keep = ~np.isin(t, redo)
        found, first, last, t = found[keep], first[keep], last[keep], t[keep]
        for k in redo:
            out[which[k]] = one(chosen[k])
        if not len(t):
            return
    # the mentions of the whole batch in C-level passes, then one slice of them per text
    a, b, pids = starts[first].tolist(), ends[last], found[:, 2]
    lps = idx.lp_array[pids]
    lp = lps.tolist()
    for i in np.flatnonzero(np.isnan(lps)).tolist():
        lp[i] = None
    cands = list(map(idx.cache.get, pids.tolist()))
    if None in cands:
        cands = [c if c is not None else idx.candidates(pid) for c, pid in zip(cands, pids.tolist())]
    offset = bases[t]
    mentions = list(
        map(
            _new_mention,
            repeat(Mention),
            zip(
                (starts[first] - offset).tolist(),
                (b - offset).tolist(),
                map(joined.__getitem__, map(slice, a, b.tolist())),
                lp,
                cands,
            ),
        )
    )
    cuts = np.flatnonzero(np.diff(t)) + 1
    for k, lo, hi in zip(t[np.r_[0, cuts]].tolist(), [0, *cuts.tolist()], [*cuts.tolist(), len(mentions)]):
        out[which[k]] = mentions[lo:hi]


def _scan(
    automaton: Any,  # a daachorse automaton: the C extension ships no type information
    codes: str,
    pos: int,
    accept: Callable[[int, int, int], tuple[int, int] | None],
) -> Iterator[tuple[tuple[int, int], int]]:
    """Leftmost-longest matches from ``pos`` that ``accept`` allows; a refused match gives way to
    the longest accepted match starting at the same place, else the scan moves one unit on."""
    while pos < len(codes):
        for s, e, pid in automaton.find(codes[pos:]):
            s += pos
            e += pos
            span = accept(s, e, pid)
            if span is not None:
                yield span, pid
                continue
            while e - s > 2:  # shorter patterns starting at s
                found = automaton.find(codes[s : e - 2])
                if not found or found[0][0] != 0:
                    break
                e = s + found[0][1]
                span = accept(s, e, found[0][2])
                if span is not None:
                    yield span, found[0][2]
                    break
            else:
                span = None
            pos = e if span is not None else s + 2
            break
        else:
            return
