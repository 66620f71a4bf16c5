"""Mention detection: find kb surface forms in text, with their candidates, fast and in little memory.

:class:`MentionIndex` compiles a :class:`kb.mentions.candidates.SurfaceSource` (by default
the anchors, titles, redirects, labels and aliases of an :class:`kb.EntityDB`)
into one automaton per language, and :meth:`MentionIndex.detect` returns the
longest non-overlapping matches, leftmost first, each with its link probability
and its candidates (top 30 by prior).

How matching works (see :mod:`kb.mentions.surfaces` for normalisation and the script rules):
text is folded and cut into *matching units* (words of space-delimited scripts,
single characters of Han, kana, Thai..., Hangul syllables); every distinct unit
of the kb gets a two-character code, so a surface form becomes a string of 2-20
code characters and the text a string of 2 characters per unit. One
Aho-Corasick search with leftmost-longest semantics over the code string then
finds every mention in a single C call; matches can only start and end on unit
boundaries, so word boundaries and the Korean word-start rule hold by
construction, and offsets map back to the original text.

Why these libraries (measured on the development machine with synthetic surfaces
of 2-4 made-up words, 24 characters on average; ``benchmarks/mention_detection.py``
has the 5M-surface figures):

- ``daachorse`` (compact double-array Aho-Corasick, Rust), character-wise, on
  two-character word codes: 1M surfaces build in 2 s into 57 MB, a 100-word
  search takes ~5 us, and the automaton serialises to bytes that load without
  a rebuild;
- the same automaton over the characters of the text (separators marking word
  boundaries) needs 123 MB per 500k surfaces; with one code character per word
  (a 300k-letter alphabet) 1M surfaces take 20 s to build and 5M did not finish
  in 12 minutes;
- ``pyahocorasick``: ~700 bytes per surface over characters (3.5 GB for 5M);
  over word codes 95 s to build 1M and 4 ms per search;
- ``ahocorasick-rs``: as fast to search, but it cannot be saved, so every load
  would rebuild it (10 s per million surfaces);
- ``marisa-trie`` (compact and memory-mapped) answers prefix queries one Python
  call per token: ~430 us per 100-word text, slower than the n-gram baseline.

The index is one SQLite file (:meth:`save` / :meth:`load`; the format and
provenance are recorded, writes are atomic); languages load on first use.
"""

from __future__ import annotations

import array
import functools
import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, repeat
from math import isnan
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import daachorse
import numpy as np

from kb.cache import cache_dir
from kb.db.sqlite import atomic_build, open_readonly
from kb.errors import (
    InputFormatError,
    MlukeError,
    OptionError,
    TextInputError,
    UnknownLanguageError,
)
from kb.gcpause import gc_paused
from kb.languages import check_language, check_languages
from kb.mentions.candidates import (
    MAX_CANDIDATES,
    Candidate,
    CandidateGenerator,
    SurfaceSource,
    default_source,
)
from kb.mentions.surfaces import (
    Folded,
    fold,
    fold_aligned,
    has_hangul,
    matching_units,
    safe_cut,
    split_hangul,
    surface_key,
    token_bounds,
)
from kb.mentions.units import UnitTable, ascii_classes, bmp_classes, cut

if TYPE_CHECKING:
    from kb.db.database import EntityDB

FORMAT = "mluke-mention-index"
FORMAT_VERSION = 1
#: Default link probability threshold (LUKE drops names linked in fewer than 1% of their occurrences).
DEFAULT_MIN_LINK_PROBABILITY = 0.01
#: Texts longer than this are processed in chunks (cut at whitespace where possible).
CHUNK_CHARS = 1 << 16

_LEAD, _TRAIL, _RADIX = 0x1000, 0x2000, 4096  # unit code = lead char + trail char
_MAX_UNITS = _RADIX * _RADIX
_UNKNOWN = "\x00\x00"                       # a unit no surface contains
_CACHE_LIMIT = 200_000                      # candidate tuples kept per language
_BATCH_CHARS = 1 << 18                      # characters of text detected together by detect_batch

_SCHEMA = """
PRAGMA page_size = 65536;  -- large blobs read twice as fast as with 4 KiB pages
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE languages(lang TEXT PRIMARY KEY, surfaces INTEGER NOT NULL, units INTEGER NOT NULL,
                       link_statistics INTEGER NOT NULL, keep_unscored INTEGER NOT NULL,
                       max_chars INTEGER NOT NULL) WITHOUT ROWID;
-- Arrays and the serialised automaton of each language ('' for the whole index).
CREATE TABLE blobs(lang TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY(lang, name)) WITHOUT ROWID;
"""
# name -> array typecode of the per-language arrays (all little-endian on disk).
_ARRAYS = {"link_probability": "d", "offsets": "q", "entities": "i", "counts": "q", "priors": "d", "sources": "B"}


def _array(typecode: str, data: bytes) -> array.array:
    """An array from little-endian bytes."""
    arr = array.array(typecode)
    arr.frombytes(data)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr


def _view(typecode: str, data: bytes) -> Any:
    """Read-only indexable view of little-endian bytes (no copy on little-endian machines)."""
    if sys.byteorder == "little":
        return memoryview(data).cast(typecode)
    return _array(typecode, data)


def _le_bytes(arr: array.array) -> bytes:
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (candidates as dicts)."""
        return {"start": self.start, "end": self.end, "surface": self.surface,
                "link_probability": self.link_probability, "candidates": [c._asdict() for c in self.candidates]}


_new_mention = tuple.__new__  # Mention(...) without the Python-level __new__ of named tuples


class _Lang:
    """The loaded data of one language: the automaton, the unit codes and zero-copy views of the arrays."""

    def __init__(self, read: Any, entity_key: Any, sources: Sequence[str], max_chars: int) -> None:
        # One blob at a time, so that peak memory holds the serialised automaton only while it is decoded.
        self.automaton = daachorse.CharwiseDoubleArrayAhoCorasick.deserialize(read("automaton"))
        units = read("units").decode("utf-8")
        units_list = units.split("\n") if units else []
        self.codes = dict(zip(units_list, map(_code, range(len(units_list)))))
        self.units = units_list
        self._table: UnitTable | None | bool = False  # False: not built yet
        arrays = {name: _view(typecode, read(name)) for name, typecode in _ARRAYS.items()}
        self.lp, self.offsets = arrays["link_probability"], arrays["offsets"]
        self.lp_array = np.asarray(self.lp, np.float64)  # the same numbers, for numpy gathers (no copy here)
        self.entities, self.counts, self.priors, self.sources = (
            arrays["entities"], arrays["counts"], arrays["priors"], arrays["sources"])
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
            found = tuple(Candidate(key(ents[i]), priors[i], counts[i], names[sources[i]])
                          for i in range(self.offsets[pid], self.offsets[pid + 1]))
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


class _LangBuilder:
    """Accumulates the surfaces of one language in compact arrays (units numbered in order of appearance)."""

    def __init__(self) -> None:
        self.unit_ids: dict[str, int] = {}
        self.pattern_units = array.array("i")
        self.pattern_ends = array.array("q")
        self.arrays = {name: array.array(t) for name, t in _ARRAYS.items()}
        self.arrays["offsets"].append(0)
        self.max_chars = 0

    def add(self, key: str, candidates: Sequence[Candidate], lp: float | None,
            entity_id: Any, source_id: Any) -> None:
        if fold(key) != key:
            raise InputFormatError(f"surface key {key!r} is not folded: sources must list kb.mentions.surfaces.surface_key() forms")
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
            raise MlukeError(f"{len(self.unit_ids):,} distinct words in one language; an index holds at most {_MAX_UNITS:,}")
        codes = "".join(map(_code, range(len(self.unit_ids))))
        all_codes = "".join([codes[2 * u:2 * u + 2] for u in self.pattern_units])
        patterns = []
        start = 0
        for end in self.pattern_ends:
            patterns.append(all_codes[2 * start:2 * end])
            start = end
        automaton = daachorse.CharwiseDoubleArrayAhoCorasick(patterns, daachorse.MATCH_KIND_LEFTMOST_LONGEST)
        blobs = {"automaton": automaton.serialize(), "units": "\n".join(self.unit_ids).encode("utf-8")}
        for name, arr in self.arrays.items():
            blobs[name] = _le_bytes(arr)
        return blobs


class MentionIndex(CandidateGenerator):
    """Compiled surface forms of a kb: finds mentions (:meth:`detect`) and candidates (:meth:`candidates`).

    >>> index = MentionIndex.for_db(kb.default_db())            # doctest: +SKIP
    >>> [(m.surface, m.candidates[0].key) for m in index.detect("Ich wohne in Valencia.", "de")]   # doctest: +SKIP
    [('Valencia', 'geonames:2509954')]

    Build with :meth:`build` (in memory) and :meth:`save`, open with :meth:`load`,
    or let :meth:`for_db` cache the index of a database. A surface is in the
    index when its link probability is at least ``min_link_probability``; a
    surface without statistics is kept when ``keep_unscored`` (by default: when
    its language has no link statistics at all, as in the embedded kb).
    """

    name = "mention-index"

    def __init__(self, meta: dict[str, Any], languages: dict[str, dict[str, int]], entity_keys: bytes,
                 entity_offsets: bytes, blobs: dict[str, dict[str, bytes]] | None = None,
                 conn: sqlite3.Connection | None = None, path: Path | None = None) -> None:
        self.meta = meta
        self.path = path
        self._info = languages
        self._conn = conn
        self._pending = blobs or {}
        self._langs: dict[str, _Lang] = {}
        self._keys_blob = entity_keys
        self._offsets_blob = entity_offsets
        self._key_offsets = _view("q", entity_offsets)

    # -- properties -------------------------------------------------------------------------
    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(sorted(self._info))

    @property
    def min_link_probability(self) -> float:
        """The threshold the index was built with (surfaces below it are not in the index)."""
        return float(self.meta["min_link_probability"])

    @property
    def provenance(self) -> dict[str, Any]:
        return self.meta["provenance"]

    def stats(self) -> dict[str, dict[str, int]]:
        """Per language: surfaces, distinct units, whether it has link statistics, whether unscored surfaces were kept."""
        return {lang: dict(info) for lang, info in sorted(self._info.items())}

    def __repr__(self) -> str:
        where = f"{str(self.path)!r}" if self.path else "in memory"
        return f"MentionIndex({where}, languages={len(self._info)}, surfaces={sum(i['surfaces'] for i in self._info.values()):,})"

    # -- building, saving, loading ------------------------------------------------------------
    @classmethod
    def build(cls, source: EntityDB | SurfaceSource, *, languages: Iterable[str] | None = None,
              min_link_probability: float = DEFAULT_MIN_LINK_PROBABILITY, keep_unscored: bool | None = None,
              max_candidates: int = MAX_CANDIDATES) -> MentionIndex:
        """Compile ``source`` (an :class:`kb.EntityDB` means :func:`kb.mentions.candidates.default_source` of it).

        ``languages`` defaults to all of the source's. Memory stays proportional
        to the compiled index, not to the source's tables.
        """
        if not 0.0 <= min_link_probability <= 1.0:
            raise OptionError(f"min_link_probability must be between 0 and 1, got {min_link_probability}")
        if max_candidates < 1:
            raise OptionError(f"max_candidates must be at least 1, got {max_candidates}")
        if not isinstance(source, SurfaceSource):
            source = default_source(source, max_candidates=max_candidates)
        langs = check_languages(source.languages if languages is None else languages, source.languages)
        entity_ids: dict[str, int] = {}
        source_ids: dict[str, int] = {}

        def entity_id(key: str) -> int:
            i = entity_ids.get(key)
            if i is None:
                i = entity_ids[key] = len(entity_ids)
            return i

        def source_id(name: str) -> int:
            i = source_ids.get(name)
            if i is None:
                if len(source_ids) == 255:
                    raise MlukeError("more than 255 candidate source names in one index")
                i = source_ids[name] = len(source_ids)
            return i

        info: dict[str, dict[str, int]] = {}
        blobs: dict[str, dict[str, bytes]] = {}
        for lang in langs:
            stats = source.has_link_statistics(lang)
            keep = (not stats) if keep_unscored is None else keep_unscored
            builder = _LangBuilder()
            previous: str | None = None
            n = 0
            for entry in source.entries(lang):
                if previous is not None and entry.key <= previous:
                    raise InputFormatError(f"{source.name}: surface keys of {lang!r} are not in ascending order "
                                        f"({previous!r} then {entry.key!r})")
                previous = entry.key
                lp = entry.link_probability
                if not entry.candidates or (lp is None and not keep) or (lp is not None and lp < min_link_probability):
                    continue
                builder.add(entry.key, entry.candidates[:max_candidates], lp, entity_id, source_id)
                n += 1
            blobs[lang] = builder.finish()
            info[lang] = {"surfaces": n, "units": len(builder.unit_ids), "link_statistics": int(stats),
                          "keep_unscored": int(keep), "max_chars": builder.max_chars}
        meta = {
            "min_link_probability": min_link_probability,
            "max_candidates": max_candidates,
            "sources": list(source_ids),
            "provenance": {"builder": "kb.MentionIndex.build", "source": source.describe(),
                           "languages": list(langs), "min_link_probability": min_link_probability,
                           "keep_unscored": keep_unscored, "max_candidates": max_candidates,
                           "daachorse": _version("daachorse")},
        }
        keys = array.array("q", [0])
        for key in entity_ids:
            keys.append(keys[-1] + len(key.encode("utf-8")))
        return cls(meta, info, "".join(entity_ids).encode("utf-8"), _le_bytes(keys), blobs=blobs)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the index to one SQLite file (atomically) and return its path."""
        path = Path(path)
        with atomic_build(path, fmt=FORMAT, version=FORMAT_VERSION, schema=_SCHEMA, overwrite=overwrite,
                          provenance=self.provenance) as conn:
            conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [
                ("min_link_probability", json.dumps(self.min_link_probability)),
                ("max_candidates", json.dumps(self.meta["max_candidates"])),
                ("sources", json.dumps(self.meta["sources"])),
            ])
            conn.executemany("INSERT INTO blobs(lang, name, data) VALUES ('', ?, ?)",
                             [("entity_keys", self._keys_blob), ("entity_offsets", self._offsets_blob)])
            for lang, info in sorted(self._info.items()):
                conn.execute("INSERT INTO languages VALUES (?, ?, ?, ?, ?, ?)",
                             (lang, info["surfaces"], info["units"], info["link_statistics"],
                              info["keep_unscored"], info["max_chars"]))
                read = self._reader(lang)
                for name in ("automaton", "units", *_ARRAYS):
                    conn.execute("INSERT INTO blobs(lang, name, data) VALUES (?, ?, ?)", (lang, name, read(name)))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MentionIndex:
        """Open an index written by :meth:`save`; each language is read on first use."""
        path = Path(path)
        conn, raw = open_readonly(path, fmt=FORMAT, version=FORMAT_VERSION, what="an mluke mention index")
        try:
            meta = {"min_link_probability": json.loads(raw["min_link_probability"]),
                    "max_candidates": json.loads(raw["max_candidates"]),
                    "sources": json.loads(raw["sources"]), "provenance": json.loads(raw.get("provenance", "{}"))}
            cols = ("surfaces", "units", "link_statistics", "keep_unscored", "max_chars")
            info = {r[0]: dict(zip(cols, r[1:])) for r in conn.execute(f"SELECT lang, {', '.join(cols)} FROM languages")}
            glob = dict(conn.execute("SELECT name, data FROM blobs WHERE lang = ''"))
            return cls(meta, info, glob["entity_keys"], glob["entity_offsets"], conn=conn, path=path)
        except (KeyError, sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            conn.close()
            raise InputFormatError(f"{path}: damaged mention index ({exc!r}); rebuild it") from None

    @classmethod
    def for_db(cls, db: EntityDB, *, languages: Iterable[str] | None = None,
               min_link_probability: float = DEFAULT_MIN_LINK_PROBABILITY, keep_unscored: bool | None = None,
               max_candidates: int = MAX_CANDIDATES) -> MentionIndex:
        """The index of ``db`` with these options: loaded from the cache, else built and cached.

        The cache file (in :func:`kb.cache.cache_dir`) is named after the
        database's path, size, modification time and the options, so a rebuilt
        database gets a new index.
        """
        langs = check_languages(db.languages if languages is None else languages, db.languages)
        stat = Path(db.path).stat()
        ident = json.dumps([str(Path(db.path).resolve()), stat.st_size, stat.st_mtime_ns, db.meta.get("created"),
                            sorted(langs), min_link_probability, keep_unscored, max_candidates, FORMAT_VERSION])
        path = cache_dir() / f"mentions-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.sqlite"
        if not path.exists():
            index = cls.build(db, languages=langs, min_link_probability=min_link_probability,
                              keep_unscored=keep_unscored, max_candidates=max_candidates)
            try:
                index.save(path)
            except FileExistsError:  # another process cached it first
                pass
        return cls.load(path)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickles by path (for worker processes); an index only in memory must be saved first."""
        if self.path is None:
            raise MlukeError("an in-memory MentionIndex cannot be pickled: save() it and load() the file")
        return (type(self).load, (str(self.path),))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _reader(self, lang: str) -> Any:
        """``read(name) -> bytes`` for the blobs of ``lang`` (from memory or from the file)."""
        if lang in self._pending:
            return self._pending[lang].__getitem__
        conn = self._conn
        if conn is None:
            raise InputFormatError(f"mention index {self.path} is closed")

        def read(name: str) -> bytes:
            row = conn.execute("SELECT data FROM blobs WHERE lang = ? AND name = ?", (lang, name)).fetchone()
            if row is None:
                raise KeyError(name)
            return row[0]

        return read

    def _lang(self, lang: str) -> _Lang:
        loaded = self._langs.get(lang)
        if loaded is not None:
            return loaded
        if lang not in self._info:
            check_language(lang)
            have = ", ".join(self.languages) or "none"
            raise UnknownLanguageError(
                f"unknown language {lang!r} for this mention index: it has {have}"
                " (build it with languages=[...] to add one)")
        try:
            loaded = _Lang(self._reader(lang), self._entity_key, self.meta["sources"], self._info[lang]["max_chars"])
        except (KeyError, ValueError) as exc:
            raise InputFormatError(f"{self.path or 'mention index'}: damaged data for {lang!r} ({exc!r}); rebuild it") from None
        self._langs[lang] = loaded
        return loaded

    def _entity_key(self, i: int) -> str:
        offsets = self._key_offsets
        return self._keys_blob[offsets[i]:offsets[i + 1]].decode("utf-8")

    # -- candidates -----------------------------------------------------------------------------
    def candidates(self, lang: str, surface: str) -> list[Candidate]:
        """Candidates of ``surface`` in any spelling that folds like it; ``[]`` if the index lacks it."""
        idx = self._lang(lang)
        pid = idx.pattern_id(surface)
        return [] if pid is None else list(idx.candidates(pid))

    def link_probability(self, lang: str, surface: str) -> float | None:
        idx = self._lang(lang)
        pid = idx.pattern_id(surface)
        if pid is None:
            return None
        lp = idx.lp[pid]
        return None if isnan(lp) else lp

    def mentions_at(self, text: str, spans: Iterable[tuple[int, int]], lang: str, *, row: int = 0) -> list[Mention]:
        """Mentions at given character spans (gold mentions), with the candidates of their surfaces
        (none for a surface the index does not know). ``row`` numbers the text in error messages."""
        out = []
        for k, span in enumerate(spans):
            try:
                a, b = (int(x) for x in span)
            except (TypeError, ValueError):
                raise OptionError(f"text {row}, span {k}: {span!r} is not a (start, end) pair") from None
            if not 0 <= a < b <= len(text):
                raise OptionError(f"text {row}, span {k}: ({a}, {b}) is outside the text (length {len(text)})")
            surface = text[a:b]
            out.append(Mention(a, b, surface, self.link_probability(lang, surface), tuple(self.candidates(lang, surface))))
        return out

    # -- detection ---------------------------------------------------------------------------------
    def detect(self, text: str, lang: str, *, min_link_probability: float | None = None) -> list[Mention]:
        """Mentions in ``text``: longest non-overlapping matches, leftmost first.

        ``min_link_probability`` (default: the index's own, 0.01 unless built
        otherwise) may only be raised: surfaces below the build threshold are not
        in the index. Surfaces without statistics always pass (they are in the
        index only where ``keep_unscored`` let them in). Texts of any length are
        accepted; long ones are processed in chunks of :data:`CHUNK_CHARS`.
        """
        if not isinstance(text, str):
            raise TextInputError(f"detect() expects a str, got {type(text).__name__}")
        idx = self._lang(lang)
        threshold = self._threshold(min_link_probability)
        n = len(text)
        if n <= CHUNK_CHARS:
            return self._detect(idx, text, 0, threshold)
        out: list[Mention] = []
        pos = 0
        while pos < n:
            end = n if n - pos <= CHUNK_CHARS else safe_cut(text, pos + CHUNK_CHARS)
            window = n if end == n else min(n, end + idx.overlap)
            found = self._detect(idx, text[pos:window], pos, threshold)
            if end < n:
                found = [m for m in found if m.start < end]
            out += found
            pos = max(end, found[-1].end) if found else end
        return out

    def detect_batch(self, texts: Iterable[str], lang: str, *,
                     min_link_probability: float | None = None) -> list[list[Mention]]:
        """:meth:`detect` for many texts of one language: the same mentions, faster.

        Texts up to :data:`CHUNK_CHARS` long whose folding keeps every offset
        and that hold no Hangul and no character beyond the BMP (nearly all text
        but Korean) are detected together, a few hundred thousand characters at
        a time, with their units cut and looked up by numpy
        (:mod:`kb.mentions.units`) and one automaton search; other texts, and any
        text when ``min_link_probability`` is raised, one at a time. The
        cyclic garbage collector is paused meanwhile: the mentions are acyclic
        tuples (freed by reference counting all the same), and its passes over a
        large heap cost more than the detection itself.
        """
        if isinstance(texts, str):
            raise TextInputError("detect_batch() expects a list of texts, got one str (use detect() for one text)")
        texts = list(texts)  # any iterable, read once
        idx = self._lang(lang)
        table = idx.unit_table() if self._threshold(min_link_probability) is None else None
        with gc_paused():
            if table is None:
                return [self.detect(t, lang, min_link_probability=min_link_probability) for t in texts]
            out: list[list[Mention]] = [[] for _ in texts]
            one = functools.partial(self._detect, idx, base=0, threshold=None)
            batches: dict[bool, tuple[list[int], list[str]]] = {True: ([], []), False: ([], [])}  # by ASCII or not
            size = {True: 0, False: 0}
            for i, t in enumerate(texts):
                if not isinstance(t, str) or len(t) > CHUNK_CHARS:
                    out[i] = self.detect(t, lang)  # a clear error, or chunks
                    continue
                ascii_ = t.isascii()
                if ascii_:
                    folded = t.lower()
                else:
                    aligned = fold_aligned(t)
                    folded = aligned.folded
                    if aligned.starts is not None or max(folded) > "\uffff" or has_hangul(folded):
                        out[i] = self._detect(idx, t, 0, None, aligned)
                        continue
                which, folds = batches[ascii_]
                if size[ascii_] + len(t) > _BATCH_CHARS and which:
                    _detect_together(idx, table, ascii_, texts, which, folds, out, one)
                    which.clear()
                    folds.clear()
                    size[ascii_] = 0
                which.append(i)
                folds.append(folded)
                size[ascii_] += len(t) + 1
            for ascii_, (which, folds) in batches.items():
                if which:
                    _detect_together(idx, table, ascii_, texts, which, folds, out, one)
            return out

    def _threshold(self, value: float | None) -> float | None:
        """The extra link probability filter to apply, ``None`` when the index's own suffices."""
        if value is None or value == self.min_link_probability:
            return None
        if not 0.0 <= value <= 1.0:
            raise OptionError(f"min_link_probability must be between 0 and 1, got {value}")
        if value < self.min_link_probability:
            raise OptionError(
                f"this index was built with min_link_probability={self.min_link_probability}, so surfaces below it "
                f"are not in it; build one with MentionIndex.build(..., min_link_probability={value}) to go lower")
        return value

    def _detect(self, idx: _Lang, text: str, base: int, threshold: float | None,
                folded: Folded | None = None) -> list[Mention]:
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
            return [_new_mention(Mention, (bounds[s], bounds[e - 1], text[bounds[s]:bounds[e - 1]],
                                           None if isnan(lp := lps[pid]) else lp, cached(pid) or candidates(pid)))
                    for s, e, pid in matches]
        out: list[Mention] = []
        for s, e, pid in matches:
            span = folded.original_span(bounds[s], bounds[e - 1])
            lp = lps[pid]
            if span is None or (threshold is not None and lp < threshold):
                break  # rare: fall back to the careful scan from here
            out.append(Mention(span[0] + base, span[1] + base, text[span[0]:span[1]], None if isnan(lp) else lp,
                               cached(pid) or candidates(pid)))
        else:
            return out

        def accept(s: int, e: int, pid: int) -> tuple[int, int] | None:
            span = folded.original_span(bounds[s], bounds[e - 1])
            return None if span is None or (threshold is not None and lps[pid] < threshold) else span

        for (a, b), pid in _scan(idx.automaton, codes, s, accept):
            lp = lps[pid]
            out.append(Mention(a + base, b + base, text[a:b], None if isnan(lp) else lp, candidates(pid)))
        return out


def _detect_together(idx: _Lang, table: UnitTable, ascii_: bool, texts: Sequence[str], which: list[int],
                     folds: list[str], out: list[list[Mention]], one: Callable[[str], list[Mention]]) -> None:
    """:meth:`MentionIndex.detect` of the texts ``texts[i]`` for i in ``which`` (folded: ``folds``), all at once.

    The same matches as one text at a time: the texts' units are cut and looked
    up together (:mod:`kb.mentions.units`; ASCII texts by the ASCII token rules, as
    :func:`kb.mentions.surfaces.token_bounds` does), coded as in
    :meth:`MentionIndex._detect` with an unknown unit between two texts, so no
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
    mentions = list(map(_new_mention, repeat(Mention), zip(
        (starts[first] - offset).tolist(), (b - offset).tolist(), map(joined.__getitem__, map(slice, a, b.tolist())),
        lp, cands)))
    cuts = np.flatnonzero(np.diff(t)) + 1
    for k, lo, hi in zip(t[np.r_[0, cuts]].tolist(), [0, *cuts.tolist()], [*cuts.tolist(), len(mentions)]):
        out[which[k]] = mentions[lo:hi]


def _scan(automaton: Any, codes: str, pos: int, accept: Any) -> Iterator[tuple[tuple[int, int], int]]:
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
                found = automaton.find(codes[s:e - 2])
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


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
