"""The row types :class:`kb.db.EntityDB` returns: :class:`Entity`, :class:`Match` and :class:`Fact`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Entity:
    """Everything the database holds about one entity's names."""

    key: str
    kind: str | None
    titles: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def name(self, lang: str, fallback: tuple[str, ...] = ("en",)) -> str | None:
        """The label (else title) in ``lang``, else in the first fallback language that has one."""
        for code in (lang, *fallback):
            if code in self.labels:
                return self.labels[code]
            if code in self.titles:
                return self.titles[code]
        return None


@dataclass(frozen=True)
class Match:
    """A look-up hit: the entity and how the name matched it."""

    key: str
    via: Literal["title", "redirect", "label", "alias"]


@dataclass(frozen=True)
class Fact:
    """A fact: ``subject`` has ``property`` (a Wikidata PID) with value ``object`` (entity keys)."""

    subject: str
    property: str
    object: str
