"""Mention detection: find kb surface forms in text, with their candidates, fast and in little memory.

One cohesive class (about 470 lines, a third of them this rationale): building, saving,
loading and querying an index; the compiled languages and the matching itself live in
:mod:`kb.mentions.compiled`.

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
from collections.abc import Iterable, Iterator
from math import isnan
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from kb.mentions.compiled import (
    ARRAY_TYPES,
    CompiledLanguage,
    LanguageBuilder,
    Mention,
    array_view,
    detect_in,
    detect_together,
    le_bytes,
)
from kb.mentions.surfaces import (
    fold_aligned,
    has_hangul,
    safe_cut,
)

if TYPE_CHECKING:
    from kb.db.database import EntityDB

FORMAT = "mluke-mention-index"
FORMAT_VERSION = 1
#: Default link probability threshold (LUKE drops names linked in fewer than 1% of their occurrences).
DEFAULT_MIN_LINK_PROBABILITY = 0.01
#: Texts longer than this are processed in chunks (cut at whitespace where possible).
CHUNK_CHARS = 1 << 16
_BATCH_CHARS = 1 << 18  # characters of text detected together by detect_batch

_SCHEMA = """
PRAGMA page_size = 65536;  -- large blobs read twice as fast as with 4 KiB pages
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE languages(lang TEXT PRIMARY KEY, surfaces INTEGER NOT NULL, units INTEGER NOT NULL,
                       link_statistics INTEGER NOT NULL, keep_unscored INTEGER NOT NULL,
                       max_chars INTEGER NOT NULL) WITHOUT ROWID;
-- Arrays and the serialised automaton of each language ('' for the whole index).
CREATE TABLE blobs(lang TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY(lang, name)) WITHOUT ROWID;
"""


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

    def __init__(
        self,
        meta: dict[str, Any],
        languages: dict[str, dict[str, int]],
        entity_keys: bytes,
        entity_offsets: bytes,
        blobs: dict[str, dict[str, bytes]] | None = None,
        conn: sqlite3.Connection | None = None,
        path: Path | None = None,
    ) -> None:
        self.meta = meta
        self.path = path
        self._info = languages
        self._conn = conn
        self._pending = blobs or {}
        self._langs: dict[str, CompiledLanguage] = {}
        self._keys_blob = entity_keys
        self._offsets_blob = entity_offsets
        self._key_offsets = array_view("q", entity_offsets)

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
    def build(
        cls,
        source: EntityDB | SurfaceSource,
        *,
        languages: Iterable[str] | None = None,
        min_link_probability: float = DEFAULT_MIN_LINK_PROBABILITY,
        keep_unscored: bool | None = None,
        max_candidates: int = MAX_CANDIDATES,
    ) -> MentionIndex:
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
            builder = LanguageBuilder()
            previous: str | None = None
            n = 0
            for entry in source.entries(lang):
                if previous is not None and entry.key <= previous:
                    raise InputFormatError(
                        f"{source.name}: surface keys of {lang!r} are not in ascending order "
                        f"({previous!r} then {entry.key!r})"
                    )
                previous = entry.key
                lp = entry.link_probability
                if not entry.candidates or (lp is None and not keep) or (lp is not None and lp < min_link_probability):
                    continue
                builder.add(entry.key, entry.candidates[:max_candidates], lp, entity_id, source_id)
                n += 1
            blobs[lang] = builder.finish()
            info[lang] = {
                "surfaces": n,
                "units": len(builder.unit_ids),
                "link_statistics": int(stats),
                "keep_unscored": int(keep),
                "max_chars": builder.max_chars,
            }
        meta = {
            "min_link_probability": min_link_probability,
            "max_candidates": max_candidates,
            "sources": list(source_ids),
            "provenance": {
                "builder": "kb.MentionIndex.build",
                "source": source.describe(),
                "languages": list(langs),
                "min_link_probability": min_link_probability,
                "keep_unscored": keep_unscored,
                "max_candidates": max_candidates,
                "daachorse": _version("daachorse"),
            },
        }
        keys = array.array("q", [0])
        for key in entity_ids:
            keys.append(keys[-1] + len(key.encode("utf-8")))
        return cls(meta, info, "".join(entity_ids).encode("utf-8"), le_bytes(keys), blobs=blobs)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the index to one SQLite file (atomically) and return its path."""
        path = Path(path)
        with atomic_build(
            path, fmt=FORMAT, version=FORMAT_VERSION, schema=_SCHEMA, overwrite=overwrite, provenance=self.provenance
        ) as conn:
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?)",
                [
                    ("min_link_probability", json.dumps(self.min_link_probability)),
                    ("max_candidates", json.dumps(self.meta["max_candidates"])),
                    ("sources", json.dumps(self.meta["sources"])),
                ],
            )
            conn.executemany(
                "INSERT INTO blobs(lang, name, data) VALUES ('', ?, ?)",
                [("entity_keys", self._keys_blob), ("entity_offsets", self._offsets_blob)],
            )
            for lang, info in sorted(self._info.items()):
                conn.execute(
                    "INSERT INTO languages VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        lang,
                        info["surfaces"],
                        info["units"],
                        info["link_statistics"],
                        info["keep_unscored"],
                        info["max_chars"],
                    ),
                )
                read = self._reader(lang)
                for name in ("automaton", "units", *ARRAY_TYPES):
                    conn.execute("INSERT INTO blobs(lang, name, data) VALUES (?, ?, ?)", (lang, name, read(name)))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MentionIndex:
        """Open an index written by :meth:`save`; each language is read on first use."""
        path = Path(path)
        conn, raw = open_readonly(path, fmt=FORMAT, version=FORMAT_VERSION, what="an mluke mention index")
        try:
            meta = {
                "min_link_probability": json.loads(raw["min_link_probability"]),
                "max_candidates": json.loads(raw["max_candidates"]),
                "sources": json.loads(raw["sources"]),
                "provenance": json.loads(raw.get("provenance", "{}")),
            }
            cols = ("surfaces", "units", "link_statistics", "keep_unscored", "max_chars")
            info = {
                r[0]: dict(zip(cols, r[1:])) for r in conn.execute(f"SELECT lang, {', '.join(cols)} FROM languages")
            }
            glob = dict(conn.execute("SELECT name, data FROM blobs WHERE lang = ''"))
            return cls(meta, info, glob["entity_keys"], glob["entity_offsets"], conn=conn, path=path)
        except (KeyError, sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            conn.close()
            raise InputFormatError(f"{path}: damaged mention index ({exc!r}); rebuild it") from None

    @classmethod
    def for_db(
        cls,
        db: EntityDB,
        *,
        languages: Iterable[str] | None = None,
        min_link_probability: float = DEFAULT_MIN_LINK_PROBABILITY,
        keep_unscored: bool | None = None,
        max_candidates: int = MAX_CANDIDATES,
    ) -> MentionIndex:
        """The index of ``db`` with these options: loaded from the cache, else built and cached.

        The cache file (in :func:`kb.cache.cache_dir`) is named after the
        database's path, size, modification time and the options, so a rebuilt
        database gets a new index.
        """
        langs = check_languages(db.languages if languages is None else languages, db.languages)
        stat = Path(db.path).stat()
        ident = json.dumps(
            [
                str(Path(db.path).resolve()),
                stat.st_size,
                stat.st_mtime_ns,
                db.meta.get("created"),
                sorted(langs),
                min_link_probability,
                keep_unscored,
                max_candidates,
                FORMAT_VERSION,
            ]
        )
        path = cache_dir() / f"mentions-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.sqlite"
        if not path.exists():
            index = cls.build(
                db,
                languages=langs,
                min_link_probability=min_link_probability,
                keep_unscored=keep_unscored,
                max_candidates=max_candidates,
            )
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

    def _lang(self, lang: str) -> CompiledLanguage:
        loaded = self._langs.get(lang)
        if loaded is not None:
            return loaded
        if lang not in self._info:
            check_language(lang)
            have = ", ".join(self.languages) or "none"
            raise UnknownLanguageError(
                f"unknown language {lang!r} for this mention index: it has {have}"
                " (build it with languages=[...] to add one)"
            )
        try:
            loaded = CompiledLanguage(
                self._reader(lang), self._entity_key, self.meta["sources"], self._info[lang]["max_chars"]
            )
        except (KeyError, ValueError) as exc:
            raise InputFormatError(
                f"{self.path or 'mention index'}: damaged data for {lang!r} ({exc!r}); rebuild it"
            ) from None
        self._langs[lang] = loaded
        return loaded

    def _entity_key(self, i: int) -> str:
        offsets = self._key_offsets
        return self._keys_blob[offsets[i] : offsets[i + 1]].decode("utf-8")

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
            out.append(
                Mention(a, b, surface, self.link_probability(lang, surface), tuple(self.candidates(lang, surface)))
            )
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
        if len(text) <= CHUNK_CHARS:
            return detect_in(idx, text, 0, threshold)
        return [m for found in self._chunks(idx, text, threshold) for m in found]

    def iter_detect(self, text: str, lang: str, *, min_link_probability: float | None = None) -> Iterator[Mention]:
        """:meth:`detect`, one mention at a time: the same mentions in the same order, holding one
        chunk of :data:`CHUNK_CHARS` characters' mentions at a time (for texts of any length).
        The text and language are checked at once, not at the first mention."""
        if not isinstance(text, str):
            raise TextInputError(f"detect() expects a str, got {type(text).__name__}")
        idx = self._lang(lang)
        threshold = self._threshold(min_link_probability)
        if len(text) <= CHUNK_CHARS:
            return iter(detect_in(idx, text, 0, threshold))
        return (m for found in self._chunks(idx, text, threshold) for m in found)

    @staticmethod
    def _chunks(idx: CompiledLanguage, text: str, threshold: float | None) -> Iterator[list[Mention]]:
        """The mentions of a long ``text``, one chunk of about :data:`CHUNK_CHARS` characters at a time."""
        n, pos = len(text), 0
        while pos < n:
            end = n if n - pos <= CHUNK_CHARS else safe_cut(text, pos + CHUNK_CHARS)
            window = n if end == n else min(n, end + idx.overlap)
            found = detect_in(idx, text[pos:window], pos, threshold)
            if end < n:
                found = [m for m in found if m.start < end]
            yield found
            pos = max(end, found[-1].end) if found else end

    def detect_batch(
        self, texts: Iterable[str], lang: str, *, min_link_probability: float | None = None
    ) -> list[list[Mention]]:
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
            one = functools.partial(detect_in, idx, base=0, threshold=None)
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
                        out[i] = detect_in(idx, t, 0, None, aligned)
                        continue
                which, folds = batches[ascii_]
                if size[ascii_] + len(t) > _BATCH_CHARS and which:
                    detect_together(idx, table, ascii_, texts, which, folds, out, one)
                    which.clear()
                    folds.clear()
                    size[ascii_] = 0
                which.append(i)
                folds.append(folded)
                size[ascii_] += len(t) + 1
            for ascii_, (which, folds) in batches.items():
                if which:
                    detect_together(idx, table, ascii_, texts, which, folds, out, one)
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
                f"are not in it; build one with MentionIndex.build(..., min_link_probability={value}) to go lower"
            )
        return value


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
