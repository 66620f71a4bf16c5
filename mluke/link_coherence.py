"""kb coherence of a linked mention, for its confidence (:mod:`mluke.confidence`): does the kb relate the
chosen entity to what the rest of the text names?

A city's country, a country's capital, continent, neighbours, language or currency are its kb neighbours
(the objects of its facts). A candidate is *supported* when it or one of its neighbours is a candidate of
another mention of the same text ("Valencia ... Venezuela": Valencia (Venezuela) is, Valencia (Spain) is
not). The confidence sees two numbers per mention: whether its top candidate is supported, and whether the
text has other mentions at all (without them, no support says nothing). Ranking never uses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb.db import EntityDB
    from kb.mentions import Mention

#: Per mention: {candidate key: 1.0 if supported else 0.0}, and 1.0 if the text has other mentions with
#: candidates (else 0.0).
Support = tuple[dict[str, float], float]


class KbCoherence:
    """The kb neighbours of entities (cached) and the support of each candidate of a text's mentions."""

    def __init__(self, db: EntityDB, max_cached: int = 1 << 16) -> None:
        self.db = db
        self.max_cached = max_cached
        self._neighbours: dict[str, frozenset[str]] = {}

    def neighbours(self, key: str) -> frozenset[str]:
        """The objects of ``key``'s facts in the kb."""
        found = self._neighbours.get(key)
        if found is None:
            if len(self._neighbours) >= self.max_cached:
                self._neighbours.clear()
            found = self._neighbours[key] = frozenset(f.object for f in self.db.facts(subject=key))
        return found

    def support(self, mentions: Sequence[Mention]) -> list[Support]:
        """:data:`Support` of each of one text's ``mentions``, from the candidates of the others."""
        keys = [{c.key for c in m.candidates} for m in mentions]
        counts: dict[str, int] = {}
        for ks in keys:
            for k in ks:
                counts[k] = counts.get(k, 0) + 1
        out: list[Support] = []
        for own in keys:
            # candidates of the other mentions: drop this mention's own once from the counts
            others = {k for k, n in counts.items() if n > (1 if k in own else 0)}
            supported = {k: 1.0 if (k in others or not self.neighbours(k).isdisjoint(others)) else 0.0 for k in own}
            out.append((supported, 1.0 if others else 0.0))
        return out
