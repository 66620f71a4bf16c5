"""kb coherence of a linked mention, for its confidence (:mod:`mluke.linking.calibration`): does the rest of the text
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

    def prefetch(self, keys: list[str]) -> None:
        """Read the facts and kinds of the uncached ``keys`` from the kb at once (two statements per 500 keys),
        so that :meth:`support` of many texts asks nothing key by key."""
        missing = [k for k in dict.fromkeys(keys) if k not in self._neighbours or k not in self._is_country]
        if not missing:
            return
        if len(self._neighbours) + len(missing) > self.max_cached:
            self._neighbours.clear()
            self._countries.clear()
            self._is_country.clear()
        kinds = self.db.kinds(missing)
        for key, facts in self.db.facts_of(missing).items():
            self._neighbours[key] = frozenset(f.object for f in facts)
            self._countries[key] = frozenset(f.object for f in facts if f.property == "P17")
            self._is_country[key] = kinds.get(key) == "country"

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
            found = self._is_country[key] = self.db.kinds([key]).get(key) == "country"
        return found

    def support(self, mentions: Sequence[Mention]) -> list[Support]:
        """:data:`Support` of each of one text's ``mentions`` (see the module docs); about linear in the
        mentions and their candidates (a text that repeats one name thousands of times stays fast)."""
        keys = [{c.key for c in m.candidates} for m in mentions]
        reach = [ks.union(*(self.neighbours(x) for x in ks)) for ks in keys]
        by_key: dict[str, list[int]] = {}
        by_reach: dict[str, list[int]] = {}
        counts: dict[str, int] = {}
        for j, (ks, rs) in enumerate(zip(keys, reach)):
            for k in ks:
                by_key.setdefault(k, []).append(j)
                counts[k] = counts.get(k, 0) + 1
            for r in rs:
                by_reach.setdefault(r, []).append(j)
        # a mention that can be a country is loose for mention i when no mention but i relates to it:
        # find up to two relatives of each (enough to tell "none", "only i" and "others")
        no_relative: set[int] = set()
        sole_relative: dict[int, int] = {}  # i -> how many country mentions have i as their only relative
        for j, ks in enumerate(keys):
            if not any(self.is_country(k) for k in ks):
                continue
            found: set[int] = set()
            for group in [by_key.get(x, []) for x in reach[j]] + [by_reach.get(x, []) for x in ks]:
                found.update(k for k in group[:3] if k != j)
                if len(found) >= 2:
                    break
            if not found:
                no_relative.add(j)
            elif len(found) == 1:
                only = next(iter(found))
                sole_relative[only] = sole_relative.get(only, 0) + 1
        # countries the mentions name or imply (a city implies its country): Lyon and Marseille share France
        implied = [set().union(*(self.countries(x) for x in ks)) for ks in keys]
        implied_by: dict[str, int] = {}  # country -> how many mentions imply it
        for cs in implied:
            for c in cs:
                implied_by[c] = implied_by.get(c, 0) + 1
        out: list[Support] = []
        for i, own in enumerate(keys):
            loose = len(no_relative) - (i in no_relative) > 0 or sole_relative.get(i, 0) > 0
            row: Support = {}
            for e in own:
                countries = self.countries(e) - {e}
                named = any(
                    counts.get(c, 0) > (c in own) or implied_by.get(c, 0) > (c in implied[i]) for c in countries
                )
                row[e] = 1.0 if loose and countries and not named else 0.0
            out.append(row)
        return out
