"""A place written with its region or country ("London, Ontario", "Valencia, Spain", カナダのロンドン): the
region or country picks the place's candidates.

News text names a city with what contains it, more often than in any other way: "Cambridge, Massachusetts",
"Hyderabad, Pakistan", "Córdoba (Argentina)", "Valencia, en Espagne"; Japanese and Chinese write the country
first (ベネズエラのバレンシア, 委内瑞拉巴伦西亚). :class:`PlaceContext` finds a mention *A* followed by a
comma or an opening bracket (and at most one short lowercase word: "en", "au", "in") and a mention *B*, or,
in unspaced scripts, *B* directly before *A* (or joined by の or ・). Where some of *A*'s candidates lie in
(P17 country or P131 region, in the kb) one of *B*'s candidates that is a country or a region, *A* keeps only
those and *B* only the countries and regions that contain them, each prior renormalised; otherwise both stay
as they are. This decides at the level of the kb, before any model reads the text: the right city's
neighbour is named right there.

Further apart, in the same sentence, a name is narrowed only by what leaves no doubt, a mention with a single
candidate (after the pairs above): a city keeps those of its candidates that lie in such a country or region
("return to London for an exhibition game in England": London in England, not London in Ontario), and a
region or country keeps those of its candidates that contain such a place ("the governor of Georgia spoke in
Atlanta": the state, not the country). Only cities are narrowed by a container further off: "Georgia and the
United States signed a deal" leaves the country Georgia alone.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kb.mentions.candidates import Candidate
from kb.mentions.compiled import Mention

if TYPE_CHECKING:
    from kb.db import EntityDB

#: The kinds of entity that contain places.
CONTAINERS = frozenset({"country", "region"})
#: What stands between a place and its region or country in spaced scripts: ", " or " (", and at most one
#: short lowercase word (French "Valencia, au Venezuela", English "London, in Canada").
_AFTER = re.compile(r"\s*[,(（]\s*(?:([^\W\d_]{1,3})\s+)?")
#: ... and before a place in unspaced scripts (カナダのロンドン, ベネズエラ・メリダ, 委内瑞拉巴伦西亚).
_BEFORE_UNSPACED = frozenset({"", "の", "・", " "})
_UNSPACED = frozenset({"ja", "zh", "th"})
#: Where a sentence ends: a full stop, question or exclamation mark followed by a space or the end, a
#: full-width one, or a line break.
_SENTENCE_BREAK = re.compile(r"[.!?](?=\s|$)|[。！？\n]")


class PlaceContext:
    """Narrows the candidates of places written with their region or country (module docs); kb facts and
    kinds are read once per entity and cached."""

    def __init__(self, db: EntityDB, max_cached: int = 1 << 16) -> None:
        self.db = db
        self.max_cached = max_cached
        self._located: dict[str, frozenset[str]] = {}
        self._kinds: dict[str, str | None] = {}

    def located_in(self, key: str) -> frozenset[str]:
        """The countries (P17) and regions (P131) ``key`` lies in, in the kb."""
        found = self._located.get(key)
        if found is None:
            if len(self._located) >= self.max_cached:
                self._located.clear()
            facts = self.db.facts(subject=key)
            found = self._located[key] = frozenset(
                f.object for f in facts if f.property in ("P17", "P131") and f.object != key
            )
        return found

    def kind(self, key: str) -> str | None:
        """The kb kind of ``key`` (``"country"``, ``"region"``, ``"city"`` ...)."""
        if key not in self._kinds:
            if len(self._kinds) >= self.max_cached:
                self._kinds.clear()
            entity = self.db.get(key)
            self._kinds[key] = None if entity is None else entity.kind
        return self._kinds[key]

    def pairs(self, text: str, mentions: Sequence[Mention], lang: str) -> list[tuple[int, int]]:
        """(place, container) indices of ``mentions`` written as the module docs say."""
        order = sorted(range(len(mentions)), key=lambda i: mentions[i].start)
        out = []
        for i, j in itertools.pairwise(order):
            gap = text[mentions[i].end : mentions[j].start]
            after = _AFTER.fullmatch(gap)
            if after and (after.group(1) is None or after.group(1).islower()):
                out.append((i, j))
            elif lang in _UNSPACED and gap in _BEFORE_UNSPACED:
                out.append((j, i))
        return out

    def narrow(
        self, text: str, mentions: Sequence[Mention], lang: str, windows: Sequence[tuple[int, int]] = ()
    ) -> list[Mention]:
        """``mentions`` (of ``text``) with the candidates of each place written with its region
        or country narrowed to those it picks, and the region's or country's to those that contain them; then
        those of the same sentence that a mention with a single candidate settles (module docs).

        ``windows``: the linker's windows of ``text`` (start, end); a sentence counts only within the window
        a mention starts in, so a long text linked a few windows at a time narrows the same way as at once.
        """
        out = list(mentions)
        paired: set[int] = set()
        for p, c in self.pairs(text, out, lang):
            place, container = out[p], out[c]
            containers = {x.key for x in container.candidates if self.kind(x.key) in CONTAINERS}
            if not containers:
                continue
            inside = [x for x in place.candidates if self.located_in(x.key) & containers]
            if not inside or len(inside) == len(place.candidates):
                continue
            holding = set().union(*(self.located_in(x.key) for x in inside)) & containers
            out[p] = place._replace(candidates=_renormalised(inside))
            out[c] = container._replace(candidates=_renormalised([x for x in container.candidates if x.key in holding]))
            paired.update((p, c))
        return self._by_sentence(text, out, paired, [a for a, _ in windows])

    def _by_sentence(
        self, text: str, mentions: list[Mention], paired: set[int], window_starts: list[int]
    ) -> list[Mention]:
        """Narrow the mentions not in a pair by the single-candidate mentions of their sentence (and window)."""
        breaks = [m.end() for m in _SENTENCE_BREAK.finditer(text)]
        sentence = [(bisect_right(window_starts, m.start), bisect_right(breaks, m.start)) for m in mentions]
        sure = [i for i, m in enumerate(mentions) if len(m.candidates) == 1]
        out = list(mentions)
        for i, m in enumerate(mentions):
            if i in paired or len(m.candidates) < 2:
                continue
            near = [mentions[j].candidates[0].key for j in sure if sentence[j] == sentence[i] and j != i]
            if not near:
                continue
            containers = {k for k in near if self.kind(k) in CONTAINERS}
            places = set().union(*(self.located_in(k) for k in near))
            keep = [
                x
                for x in m.candidates
                if (self.kind(x.key) == "city" and self.located_in(x.key) & containers)
                or (self.kind(x.key) in CONTAINERS and x.key in places)
            ]
            if keep and len(keep) < len(m.candidates):
                out[i] = m._replace(candidates=_renormalised(keep))
        return out


def _renormalised(candidates: list[Candidate]) -> tuple[Candidate, ...]:
    total = sum(x.prior for x in candidates)
    if total <= 0:
        return tuple(candidates)
    return tuple(x._replace(prior=x.prior / total) for x in candidates)
