"""Candidate generation: which entities a surface form may refer to, with a prior p(e|m).

One small interface, :class:`CandidateGenerator` (implement :meth:`~CandidateGenerator.candidates`;
the batch version comes for free), and one implementation per source (the two that read an
:class:`kb.EntityDB` are in :mod:`kb.mentions.db_candidates`):

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

import heapq
import itertools
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kb.errors import OptionError

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject

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
    count: int  # type: ignore[assignment]  # shadows tuple.count: the raw link count behind the prior (0: no counts)
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

    def describe(self) -> JsonObject:
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

    def describe(self) -> JsonObject:
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
