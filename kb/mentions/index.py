"""Mention detection: find kb surface forms in text, with their candidates, fast and in little memory.

Querying an index; compiling, saving and loading it are :mod:`kb.mentions.index_files`', the compiled
languages and the matching itself :mod:`kb.mentions.compiled`'s.

:class:`MentionIndex` compiles a :class:`kb.mentions.candidates.SurfaceSource` (by default
the anchors, titles, redirects, labels and aliases of an :class:`kb.EntityDB`)
into one automaton per language, and :meth:`MentionIndex.detect` returns the
longest non-overlapping matches, leftmost first, each with its link probability
and its candidates (top 30 by prior).

How matching works: see :mod:`kb.mentions.compiled`.
Why these libraries (daachorse over word codes): see :mod:`kb.mentions.index_files`, which compiles the index.

The index is one SQLite file (:meth:`save` / :meth:`load`; the format and
provenance are recorded, writes are atomic); languages load on first use.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from math import isnan
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

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
)
from kb.mentions.compiled import (
    CompiledLanguage,
    Mention,
    array_view,
    detect_in,
    detect_together,
)
from kb.mentions.index_files import IndexData, cache_path, compile_source, read_index, write_index
from kb.mentions.surfaces import (
    fold_aligned,
    has_hangul,
    safe_cut,
)

if TYPE_CHECKING:
    from kb.db.database import EntityDB
    from kb.jsontypes import JsonObject

#: Default link probability threshold (LUKE drops names linked in fewer than 1% of their occurrences).
DEFAULT_MIN_LINK_PROBABILITY = 0.01
#: Texts longer than this are processed in chunks (cut at whitespace where possible).
CHUNK_CHARS = 1 << 16
_BATCH_CHARS = 1 << 18  # characters of text detected together by detect_batch


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
    def provenance(self) -> JsonObject:
        return cast("dict[str, Any]", self.meta["provenance"])

    def stats(self) -> dict[str, dict[str, int]]:
        """Per language: surfaces, distinct units, whether it has link statistics, whether unscored surfaces
        were kept."""
        return {lang: dict(info) for lang, info in sorted(self._info.items())}

    def __repr__(self) -> str:
        where = f"{str(self.path)!r}" if self.path else "in memory"
        surfaces = sum(i["surfaces"] for i in self._info.values())
        return f"MentionIndex({where}, languages={len(self._info)}, surfaces={surfaces:,})"

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
        """Compile ``source`` in memory (memory stays proportional to the index, not to the source's tables).

        Args:
            source: the surfaces; an :class:`kb.EntityDB` means its
                :func:`~kb.mentions.db_candidates.default_source`.
            languages: the languages to compile (default: all of the source's).
            min_link_probability: leave out surfaces linked less often than this.
            keep_unscored: keep surfaces without link statistics (default: in languages without any).
            max_candidates: the most candidates kept per surface.

        Returns:
            The index (:meth:`save` writes it).
        """
        data = compile_source(
            source,
            languages=languages,
            min_link_probability=min_link_probability,
            keep_unscored=keep_unscored,
            max_candidates=max_candidates,
        )
        return cls(data.meta, data.languages, data.entity_keys, data.entity_offsets, blobs=data.blobs)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the index to one SQLite file (atomically) and return its path."""
        return write_index(
            path,
            IndexData(self.meta, self._info, self._keys_blob, self._offsets_blob, {}),
            self._reader,
            overwrite=overwrite,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MentionIndex:
        """Open an index written by :meth:`save`; each language is read on first use."""
        path = Path(path)
        data, conn = read_index(path)
        return cls(data.meta, data.languages, data.entity_keys, data.entity_offsets, conn=conn, path=path)

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
        """The index of ``db`` with these options (see :meth:`build`): loaded from the cache (named after the
        database's path, size, modification time and the options), else built and cached.

        Returns:
            The index.
        """
        langs = check_languages(db.languages if languages is None else languages, db.languages)
        path = cache_path(db, langs, min_link_probability, keep_unscored, max_candidates)
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

    def _reader(self, lang: str) -> Callable[[str], bytes]:
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
            return cast(bytes, row[0])

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
        """Mentions in ``text`` (any length; long ones in chunks of :data:`CHUNK_CHARS`).

        Args:
            text: the text.
            lang: its language.
            min_link_probability: a higher threshold than the index's own (surfaces below that are not in
                the index; surfaces without statistics always pass).

        Returns:
            The longest non-overlapping matches, leftmost first.

        Raises:
            UnknownLanguageError: a language the index lacks; TextInputError: ``text`` is not a str.
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
