"""``kb.lookup``: what a name refers to, or everything about one entity (what ``mluke kb lookup`` prints),
in any database :func:`kb.open_db` opens (so it sits above :mod:`kb.db` and :mod:`kb.sources`)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from kb.db.database import EntityDB
from kb.errors import Option, OptionError
from kb.sources.embedded import open_db


@dataclass(frozen=True)
class EntityDescription:
    """One entity as a look-up shows it: how it matched, its names in the query language and English,
    its names everywhere and, when looked up by key, its facts ``(property, property name, object,
    object label)``."""

    key: str
    via: str
    kind: str | None
    label: str | None
    label_en: str | None
    titles: dict[str, str]
    labels: dict[str, str]
    aliases: dict[str, list[str]]
    facts: list[tuple[str, str, str, str]] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.facts is None:
            data.pop("facts")
        return data


def lookup(db: EntityDB | str | os.PathLike[str] | None, query: str | None = None, *, lang: str = "en",
           key: str | None = None) -> list[EntityDescription]:
    """The entities ``query`` may refer to in ``lang`` (title, redirect, label or alias), or the entity
    ``key`` with its facts; give one of the two. ``db``: anything :func:`kb.open_db` takes. An unknown
    key raises :class:`kb.errors.NotFoundError`."""
    if (query is None) == (key is None):
        raise OptionError("give either {query} (with {lang}) or {key}, not both and not neither", options={
            "query": Option("a name as query=", "a QUERY"), "lang": Option("lang=", "--lang"), "key": Option("key=", "--key")})
    opened = open_db(db)
    try:
        return _describe(opened, query, lang, key)
    finally:
        if opened is not db:
            opened.close()


def _describe(db: EntityDB, query: str | None, lang: str, key: str | None) -> list[EntityDescription]:
    matches = [(key, "key")] if key is not None else [(m.key, m.via) for m in db.lookup(lang, query)]  # type: ignore[arg-type]
    out = []
    for k, via in matches:
        e = db.entity(k)
        facts = None
        if key is not None:
            rows = db.facts(subject=k)
            names = db.labels([f.object for f in rows], lang)
            facts = [(f.property, db.property_label(f.property, lang) or "", f.object, names.get(f.object, ""))
                     for f in rows]
        out.append(EntityDescription(k, via, e.kind, e.name(lang), e.name("en"), e.titles, e.labels,
                                     {code: list(v) for code, v in e.aliases.items()}, facts))
    return out
