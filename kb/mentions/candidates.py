"""Candidate generation: which entities a surface form may refer to, with a prior p(e|m).

The module is a little over 400 lines because the three sources share one ranking and one
merge-by-key pass; they read best side by side.

One small interface, :class:`CandidateGenerator` (implement :meth:`~CandidateGenerator.candidates`;
the batch version comes for free), and one implementation per source:

- :class:`AnchorCandidates` — Wikipedia anchor statistics: the prior is the
  share of the surface's links that point to the entity (raw counts from the
  ``anchors`` table), and the surface's link probability comes from the
  ``surfaces`` table (LUKE's link probability);
- :class:`NameCandidates` — titles, redirects, labels and aliases, for surfaces
  without anchor statistics (the embedded kb has only these). The fallback prior
  weights each entity by the best way the name matched it
  (:data:`NAME_WEIGHTS`: page title 4, redirect / label / title without its
  ``(qualifier)`` 2, alias 1) and normalises: in the embedded kb, whose
  titles give the plain name to the most prominent entity ("London" vs
  "London (Canada)"), the prior prefers the prominent one;
- :class:`CombinedCandidates` — a weighted mixture of sources (by default
  anchors 1.0, names 0.05: entities that are only *named* so keep a small
  prior next to linked ones, and get it all when the surface has no links).

Sources that can list every surface they know (:class:`SurfaceSource`) can be
compiled into a :class:`kb.mentions.index.MentionIndex`, which answers the same
questions for any spelling and finds mentions in text. Priors follow KnowBert
(Peters et al., 2019): at most :data:`MAX_CANDIDATES` (30) candidates per
surface, best first; the NIL choice is the caller's (see
:attr:`kb.mentions.index.Mention.nil_prior`).

Surfaces are compared by :func:`kb.mentions.surfaces.surface_key`. The SQLite sources
look a surface up under its common spellings (as given, lower case, upper case,
capitalised, title case); the compiled index covers every spelling.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import sqlite3
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kb.db import schema
from kb.db.sqlite import chunked, open_readonly
from kb.db.titles import normalize_title
from kb.errors import OptionError
from kb.languages import check_language
from kb.mentions.surfaces import surface_key

if TYPE_CHECKING:
    from kb.db.database import EntityDB

#: Candidates kept per surface (KnowBert's candidate selector keeps 30).
MAX_CANDIDATES = 30
#: Fallback prior weights of :class:`NameCandidates`, by how the name matched.
NAME_WEIGHTS: dict[str, float] = {"title": 4.0, "redirect": 2.0, "label": 2.0, "title_base": 2.0, "alias": 1.0}
#: Default mixture of :func:`default_source`: (source name, weight).
DEFAULT_WEIGHTS: dict[str, float] = {"anchors": 1.0, "names": 0.05}


class Candidate(NamedTuple):
    """One entity a surface may refer to."""

    key: str  #: entity key (QID or source-prefixed key)
    prior: float  #: p(e|m) in [0, 1]
    count: int  #: raw link count behind the prior (0 when the source has no counts)
    source: str  #: which generator proposed it ("anchors", "names", ...)


@dataclass(frozen=True)
class SurfaceEntry:
    """A surface key with its candidates (best first) and link probability (``None``: no statistics)."""

    key: str
    candidates: tuple[Candidate, ...]
    link_probability: float | None = None


def rank(
    scores: dict[str, float], counts: dict[str, int], sources: dict[str, str], total: float, limit: int
) -> tuple[Candidate, ...]:
    """Candidates by descending score (ties by key), priors ``score / total``, at most ``limit``."""
    if total <= 0:
        return ()
    if len(scores) == 1:
        [(k, score)] = scores.items()
        return (Candidate(k, score / total, counts.get(k, 0), sources[k]),)
    best = heapq.nsmallest(limit, scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(Candidate(k, s / total, counts.get(k, 0), sources[k]) for k, s in best)


class CandidateGenerator(ABC):
    """Proposes entities for a surface form. Implement :meth:`candidates`."""

    #: Short name, recorded in :attr:`Candidate.source`.
    name: str = "candidates"

    @abstractmethod
    def candidates(self, lang: str, surface: str) -> list[Candidate]:
        """Entities that ``surface`` may refer to in ``lang``, best first (at most 30)."""

    def candidates_batch(self, lang: str, surfaces: Iterable[str]) -> list[list[Candidate]]:
        """:meth:`candidates` for many surfaces."""
        return [self.candidates(lang, s) for s in surfaces]

    def link_probability(self, lang: str, surface: str) -> float | None:
        """Share of documents where ``surface`` is a link; ``None`` when the source has no statistics."""
        return None


class SurfaceSource(CandidateGenerator):
    """A generator that can list every surface it knows, so it can be compiled into a mention index."""

    languages: tuple[str, ...] = ()

    @abstractmethod
    def entries(self, lang: str) -> Iterator[SurfaceEntry]:
        """Every surface key of ``lang`` once, in ascending key order (code point order)."""

    def has_link_statistics(self, lang: str) -> bool:
        """Whether the source holds link statistics for ``lang`` (decides what happens to unscored surfaces)."""
        return False

    def describe(self) -> dict[str, Any]:
        """Provenance of the source, stored in a compiled index."""
        return {"source": self.name}


def spellings(surface: str) -> list[str]:
    """The spellings of ``surface`` that SQLite sources look up (kb tables store names as written)."""
    nfc = unicodedata.normalize("NFC", surface).strip()
    forms = [
        surface,
        nfc,
        unicodedata.normalize("NFKC", nfc),
        nfc.lower(),
        nfc.upper(),
        nfc.title(),
        nfc[:1].upper() + nfc[1:],
        nfc[:1].upper() + nfc[1:].lower(),
    ]
    return list(dict.fromkeys(f for f in forms if f))


class _DBSource(SurfaceSource):
    """Shared plumbing of the sources read from an :class:`kb.EntityDB` file."""

    def __init__(self, db: EntityDB, *, max_candidates: int = MAX_CANDIDATES) -> None:
        if max_candidates < 1:
            raise OptionError(f"max_candidates must be at least 1, got {max_candidates}")
        self.db = db
        self.languages = db.languages
        self.max_candidates = max_candidates
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        """A private read-only connection with the ``mluke_key`` SQL function (NULL-safe)."""
        if self._conn is None:
            conn, _ = open_readonly(self.db.path, fmt=schema.FORMAT, version=schema.FORMAT_VERSION, what=self.db.WHAT)
            conn.create_function("mluke_key", 1, _sql_key, deterministic=True)
            conn.create_function("mluke_title_base", 1, title_base, deterministic=True)
            self._conn = conn
        return self._conn

    def _check(self, lang: str) -> str:
        return check_language(lang, self.languages)

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.name,
            "database": str(self.db.path),
            "database_created": self.db.meta.get("created"),
            "max_candidates": self.max_candidates,
        }


_cached_key = functools.lru_cache(maxsize=1 << 18)(surface_key)  # names repeat across languages and rows


def _sql_key(text: str | None) -> str | None:
    return None if text is None else _cached_key(text)


def title_base(title: str | None) -> str | None:
    """A page title without its trailing ``(qualifier)``: "Valencia (Spain)" -> "Valencia"; else ``None``."""
    if not title or not title.endswith(")"):
        return None
    cut = title.rfind(" (")
    base = title[:cut].strip() if cut > 0 else ""
    return base or None


class AnchorCandidates(_DBSource):
    """Candidates from anchor statistics: prior = links from the surface to the entity / all its links."""

    name = "anchors"

    def candidates(self, lang: str, surface: str) -> list[Candidate]:
        self._check(lang)
        key = surface_key(surface)
        counts: dict[str, int] = {}
        for raw, entity, count in self._rows("SELECT surface, entity, count FROM anchors", lang, surface):
            if surface_key(raw) == key:
                counts[entity] = counts.get(entity, 0) + count
        return list(self.rank_counts(counts))

    def link_probability(self, lang: str, surface: str) -> float | None:
        self._check(lang)
        key = surface_key(surface)
        link = text = 0
        found = False
        for raw, link_docs, text_docs in self._rows(
            "SELECT surface, link_docs, text_docs FROM surfaces", lang, surface
        ):
            if surface_key(raw) == key:
                found = True
                link += link_docs
                text += text_docs
        return link_probability(link, text) if found else None

    def _rows(self, select: str, lang: str, surface: str) -> list[tuple[Any, ...]]:
        forms = spellings(surface)
        marks = ",".join("?" * len(forms))
        return self.conn.execute(f"{select} WHERE lang = ? AND surface IN ({marks})", (lang, *forms)).fetchall()

    def rank_counts(self, counts: dict[str, int]) -> tuple[Candidate, ...]:
        """Prior p(e|m) = count(e) / sum of counts, best first, at most ``max_candidates``."""
        return rank(dict(counts), counts, dict.fromkeys(counts, self.name), sum(counts.values()), self.max_candidates)

    def has_link_statistics(self, lang: str) -> bool:
        return self.conn.execute("SELECT 1 FROM surfaces WHERE lang = ? LIMIT 1", (lang,)).fetchone() is not None

    def entries(self, lang: str) -> Iterator[SurfaceEntry]:
        self._check(lang)
        anchors = self.conn.execute(
            "SELECT k, entity, SUM(count) FROM (SELECT mluke_key(surface) AS k, entity, count FROM anchors "
            "WHERE lang = ?) WHERE k != '' GROUP BY k, entity ORDER BY k",
            (lang,),
        )
        stats = self.conn.cursor().execute(
            "SELECT k, SUM(link_docs), SUM(text_docs) FROM (SELECT mluke_key(surface) AS k, link_docs, text_docs "
            "FROM surfaces WHERE lang = ?) WHERE k != '' GROUP BY k ORDER BY k",
            (lang,),
        )
        grouped = ((k, {e: c for _, e, c in rows}) for k, rows in itertools.groupby(anchors, key=lambda r: r[0]))
        lps = ((k, link_probability(l, t)) for k, l, t in stats)
        for key, counts, lp in _merge_by_key(grouped, lps):
            yield SurfaceEntry(key, self.rank_counts(counts or {}), lp)


def link_probability(link_docs: int, text_docs: int) -> float:
    """Documents where the surface is a link / documents where it occurs (never divides by zero)."""
    return link_docs / max(text_docs, link_docs, 1)


def _merge_by_key(a: Iterator[tuple[str, Any]], b: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any, Any]]:
    """Join two key-sorted streams: ``(key, value_a or None, value_b or None)``."""
    tagged = heapq.merge(((k, 0, v) for k, v in a), ((k, 1, v) for k, v in b), key=lambda t: t[:2])
    for key, group in itertools.groupby(tagged, key=lambda t: t[0]):
        values: list[Any] = [None, None]
        for _, side, value in group:
            values[side] = value
        yield key, values[0], values[1]


class NameCandidates(_DBSource):
    """Candidates from titles, redirects, labels and aliases, with the fallback prior of :data:`NAME_WEIGHTS`.

    Each entity scores the best weight among the names that matched it; priors
    are the scores normalised over the surface's entities.
    """

    name = "names"

    def __init__(
        self, db: EntityDB, *, max_candidates: int = MAX_CANDIDATES, weights: dict[str, float] | None = None
    ) -> None:
        super().__init__(db, max_candidates=max_candidates)
        self.weights = dict(NAME_WEIGHTS if weights is None else weights)
        missing = set(NAME_WEIGHTS) - set(self.weights)
        if missing or any(w < 0 for w in self.weights.values()):
            raise OptionError(
                f"weights must give a non-negative number for each of {', '.join(NAME_WEIGHTS)}"
                f" (missing: {', '.join(sorted(missing)) or 'none'})"
            )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "weights": self.weights}

    def candidates(self, lang: str, surface: str) -> list[Candidate]:
        self._check(lang)
        key = surface_key(surface)
        if not key:
            return []
        forms = spellings(surface)
        rows: list[tuple[str, str, str]] = []  # (name as stored, entity, kind)
        c = self.conn
        for part in chunked(list(dict.fromkeys(normalize_title(f) for f in forms))):
            marks = ",".join("?" * len(part))
            rows += [
                (t, e, "title")
                for t, e in c.execute(
                    f"SELECT title, entity FROM titles WHERE lang = ? AND title IN ({marks})", (lang, *part)
                )
            ]
            for (source,) in c.execute(
                f"SELECT source FROM redirects WHERE lang = ? AND source IN ({marks})", (lang, *part)
            ):
                entity = self.db.resolve_title(lang, source)
                if entity is not None:
                    rows.append((source, entity, "redirect"))
            for base in part:  # "Valencia" -> "Valencia (Spain)"
                rows += [
                    (title_base(t) or "", e, "title_base")
                    for t, e in c.execute(
                        "SELECT title, entity FROM titles WHERE lang = ? AND title > ? AND title < ?",
                        (lang, base + " (", base + " (\U0010ffff"),
                    )
                ]
        marks = ",".join("?" * len(forms))
        rows += c.execute(
            f"SELECT name, entity, kind FROM names WHERE lang = ? AND name IN ({marks})", (lang, *forms)
        ).fetchall()
        best: dict[str, float] = {}
        for name, entity, kind in rows:
            if surface_key(name) == key:
                best[entity] = max(best.get(entity, 0.0), self.weights[kind])
        return list(self.rank_weights(best))

    def rank_weights(self, best: dict[str, float]) -> tuple[Candidate, ...]:
        """Prior = weight / sum of weights, best first, at most ``max_candidates``."""
        return rank(best, {}, dict.fromkeys(best, self.name), sum(best.values()), self.max_candidates)

    def entries(self, lang: str) -> Iterator[SurfaceEntry]:
        self._check(lang)
        w = self.weights
        rows = self.conn.execute(
            """
            WITH RECURSIVE hop(source, target, n) AS (
                SELECT source, target, 1 FROM redirects r WHERE lang = :lang
                    AND NOT EXISTS (SELECT 1 FROM titles t WHERE t.lang = :lang AND t.title = r.source)
                UNION ALL
                SELECT h.source, r.target, h.n + 1 FROM hop h JOIN redirects r ON r.lang = :lang AND r.source = h.target
                WHERE h.n < 16 AND NOT EXISTS (SELECT 1 FROM titles t WHERE t.lang = :lang AND t.title = h.target)
            ),
            named(k, entity, w) AS (
                SELECT mluke_key(title), entity, :title FROM titles WHERE lang = :lang
                UNION ALL SELECT mluke_key(mluke_title_base(title)), entity, :title_base FROM titles
                    WHERE lang = :lang AND title LIKE '%)'
                UNION ALL SELECT mluke_key(name), entity, CASE kind WHEN 'label' THEN :label ELSE :alias END
                    FROM names WHERE lang = :lang
                UNION ALL SELECT mluke_key(h.source), t.entity, :redirect FROM hop h
                    JOIN titles t ON t.lang = :lang AND t.title = h.target
            )
            SELECT k, entity, MAX(w) FROM named WHERE k IS NOT NULL AND k != '' GROUP BY k, entity ORDER BY k
            """,
            {"lang": lang, **w},
        )
        for key, group in itertools.groupby(rows, key=lambda r: r[0]):
            yield SurfaceEntry(key, self.rank_weights({e: s for _, e, s in group}), None)


class CombinedCandidates(SurfaceSource):
    """A weighted mixture of sources: prior(e) = sum_i w_i p_i(e) / sum of w_i over the sources that know the surface.

    Raw counts add up; :attr:`Candidate.source` names the source that
    contributed most. The link probability is the first source's that has one.
    """

    name = "combined"

    def __init__(self, sources: Sequence[tuple[SurfaceSource, float]], *, max_candidates: int = MAX_CANDIDATES) -> None:
        if not sources:
            raise OptionError("CombinedCandidates needs at least one (source, weight) pair")
        for source, weight in sources:
            if not isinstance(source, CandidateGenerator) or not weight > 0:
                raise OptionError(
                    f"expected (candidate generator, positive weight) pairs, got ({source!r}, {weight!r})"
                )
        self.sources = list(sources)
        self.max_candidates = max_candidates
        self.languages = tuple(dict.fromkeys(l for s, _ in sources for l in s.languages))

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.name,
            "max_candidates": self.max_candidates,
            "parts": [{**s.describe(), "weight": w} for s, w in self.sources],
        }

    def combine(self, lists: Sequence[Sequence[Candidate]]) -> tuple[Candidate, ...]:
        """Mix the candidate lists of the sources (same order as ``sources``)."""
        present = [c for c in lists if c]
        if len(present) == 1:  # one source knows the surface: its priors are the mixture's
            return tuple(present[0][: self.max_candidates])
        scores: dict[str, float] = {}
        counts: dict[str, int] = {}
        best: dict[str, tuple[float, str]] = {}
        total = 0.0
        for (_, weight), cands in zip(self.sources, lists):
            if not cands:
                continue
            total += weight
            for c in cands:
                share = weight * c.prior
                scores[c.key] = scores.get(c.key, 0.0) + share
                counts[c.key] = counts.get(c.key, 0) + c.count
                if share > best.get(c.key, (-1.0, ""))[0]:
                    best[c.key] = (share, c.source)
        return rank(scores, counts, {k: s for k, (_, s) in best.items()}, total, self.max_candidates)

    def candidates(self, lang: str, surface: str) -> list[Candidate]:
        return list(self.combine([s.candidates(lang, surface) for s, _ in self.sources]))

    def link_probability(self, lang: str, surface: str) -> float | None:
        return next((p for s, _ in self.sources if (p := s.link_probability(lang, surface)) is not None), None)

    def has_link_statistics(self, lang: str) -> bool:
        return any(s.has_link_statistics(lang) for s, _ in self.sources if lang in s.languages)

    def entries(self, lang: str) -> Iterator[SurfaceEntry]:
        streams = [_tagged(s.entries(lang), i) for i, (s, _) in enumerate(self.sources) if lang in s.languages]
        for key, group in itertools.groupby(heapq.merge(*streams, key=lambda t: t[:2]), key=lambda t: t[0]):
            found: list[SurfaceEntry | None] = [None] * len(self.sources)
            for _, i, entry in group:
                found[i] = entry
            lp = next((e.link_probability for e in found if e is not None and e.link_probability is not None), None)
            yield SurfaceEntry(key, self.combine([e.candidates if e else () for e in found]), lp)


def _tagged(entries: Iterator[SurfaceEntry], i: int) -> Iterator[tuple[str, int, SurfaceEntry]]:
    return ((e.key, i, e) for e in entries)


def default_source(db: EntityDB, *, max_candidates: int = MAX_CANDIDATES) -> CombinedCandidates:
    """Anchors and names of ``db`` mixed with :data:`DEFAULT_WEIGHTS`."""
    return CombinedCandidates(
        [
            (AnchorCandidates(db, max_candidates=max_candidates), DEFAULT_WEIGHTS["anchors"]),
            (NameCandidates(db, max_candidates=max_candidates), DEFAULT_WEIGHTS["names"]),
        ],
        max_candidates=max_candidates,
    )
