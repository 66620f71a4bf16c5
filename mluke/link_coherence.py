"""kb coherence of a linked mention, for its confidence (:mod:`mluke.confidence`): does the rest of the text
name a country that contradicts the chosen city?

A candidate *conflicts* with its text when it has a country in the kb (P17) that no other mention of the
text can be, while another mention can be a country that nothing else in the text accounts for (no
candidate of a third mention is related to it in the kb, either way). A country is also named when another
mention can be a city in it. "Valencia ... Venezuela" with only Valencia (Spain) left in the kb: a
conflict; "Essen ... Bergen in Norwegen": none for Essen (Bergen accounts for Norway); "Tours, near Orange,
... Italie": none (Orange is in France too); "Reading, Nice and Split": none (no country named); "Rome and
Turkey": a conflict for Rome, a known false alarm. Only this one signal is used: texts
whose mentions are simply unrelated are common and must not lose confidence. Ranking never uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb.db import EntityDB
    from kb.mentions import Mention

#: Per mention: {candidate key: 1.0 if it conflicts with the text, else 0.0}.
Support = dict[str, float]


class KbCoherence:
    """kb facts of entities (cached) and the conflicts of each candidate of a text's mentions."""

    def __init__(self, db: EntityDB, max_cached: int = 1 << 16) -> None:
        self.db = db
        self.max_cached = max_cached
        self._neighbours: dict[str, frozenset[str]] = {}
        self._countries: dict[str, frozenset[str]] = {}
        self._is_country: dict[str, bool] = {}

    def _cache_room(self) -> None:
        if len(self._neighbours) >= self.max_cached:
            self._neighbours.clear()
            self._countries.clear()
            self._is_country.clear()

    def neighbours(self, key: str) -> frozenset[str]:
        """The objects of ``key``'s facts in the kb."""
        found = self._neighbours.get(key)
        if found is None:
            self._cache_room()
            facts = self.db.facts(subject=key)
            found = self._neighbours[key] = frozenset(f.object for f in facts)
            self._countries[key] = frozenset(f.object for f in facts if f.property == "P17")
        return found

    def countries(self, key: str) -> frozenset[str]:
        """``key``'s countries (P17) in the kb."""
        self.neighbours(key)
        return self._countries[key]

    def is_country(self, key: str) -> bool:
        """Whether the kb's entity ``key`` is of kind ``country``."""
        found = self._is_country.get(key)
        if found is None:
            entity = self.db.get(key)
            found = self._is_country[key] = entity is not None and entity.kind == "country"
        return found

    def support(self, mentions: Sequence[Mention]) -> list[Support]:
        """:data:`Support` of each of one text's ``mentions`` (see the module docs); linear in the mentions
        but for those that can be a country."""
        keys = [{c.key for c in m.candidates} for m in mentions]
        n = len(keys)
        reach = [ks.union(*(self.neighbours(x) for x in ks)) for ks in keys]
        counts: dict[str, int] = {}
        for ks in keys:
            for k in ks:
                counts[k] = counts.get(k, 0) + 1
        related = {  # mentions that can be a country -> the other mentions related to them
            j: {
                k for k in range(n) if k != j and (not keys[j].isdisjoint(reach[k]) or not keys[k].isdisjoint(reach[j]))
            }
            for j in range(n)
            if any(self.is_country(k) for k in keys[j])
        }
        # countries the mentions name or imply (a city implies its country): Tours and Orange share France
        implied = [set().union(*(self.countries(x) for x in ks)) for ks in keys]
        implied_by: dict[str, int] = {}  # country -> how many mentions imply it
        for cs in implied:
            for c in cs:
                implied_by[c] = implied_by.get(c, 0) + 1
        out: list[Support] = []
        for i, own in enumerate(keys):
            loose = any(j != i and not (rel - {i}) for j, rel in related.items())
            row: Support = {}
            for e in own:
                countries = self.countries(e) - {e}
                named = any(
                    counts.get(c, 0) > (c in own) or implied_by.get(c, 0) > (c in implied[i]) for c in countries
                )
                row[e] = 1.0 if loose and countries and not named else 0.0
            out.append(row)
        return out
