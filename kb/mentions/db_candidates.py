"""The candidate sources that read an :class:`kb.EntityDB` file: :class:`AnchorCandidates` (Wikipedia anchor
statistics) and :class:`NameCandidates` (titles, redirects, labels and aliases), and :func:`default_source`,
their weighted mixture (see :mod:`kb.mentions.candidates` for the interface and the priors)."""

from __future__ import annotations

import functools
import heapq
import itertools
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kb.db import schema
from kb.db.sqlite import chunked, open_readonly
from kb.db.titles import normalize_title
from kb.errors import OptionError
from kb.languages import check_language
from kb.mentions.surfaces import surface_key

if TYPE_CHECKING:
    from kb.db.database import EntityDB
    from kb.jsontypes import JsonObject

#: Candidates kept per surface (KnowBert's candidate selector keeps 30).
from kb.mentions.candidates import (
    DEFAULT_WEIGHTS,
    MAX_CANDIDATES,
    NAME_WEIGHTS,
    Candidate,
    CombinedCandidates,
    SurfaceEntry,
    SurfaceSource,
    rank,
    spellings,
)


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

    def describe(self) -> JsonObject:
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

    def describe(self) -> JsonObject:
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


def default_source(db: EntityDB, *, max_candidates: int = MAX_CANDIDATES) -> CombinedCandidates:
    """Anchors and names of ``db`` mixed with :data:`DEFAULT_WEIGHTS`."""
    return CombinedCandidates(
        [
            (AnchorCandidates(db, max_candidates=max_candidates), DEFAULT_WEIGHTS["anchors"]),
            (NameCandidates(db, max_candidates=max_candidates), DEFAULT_WEIGHTS["names"]),
        ],
        max_candidates=max_candidates,
    )
