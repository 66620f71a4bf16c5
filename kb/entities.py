"""``kb.lookup``: what a name refers to, or everything about one entity (what ``mluke kb lookup`` prints),
in any database :func:`kb.open_db` opens (so it sits above :mod:`kb.db` and :mod:`kb.sources`)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from kb.db.database import EntityDB
from kb.errors import Option, OptionError
from kb.sources.embedded import open_db

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject


@dataclass(frozen=True)
class EntityDescription:
    """One entity as a look-up shows it: how it matched, its names in the query language and English,
    its names everywhere and, when looked up by key, its facts ``(property, property name, object,
    object label)``."""

    key: str
    via: str
    kind: str | None
    name: str  #: qualified name in the query language (:func:`qualified_names`): "Cambridge (Canada)"
    prior: float | None  #: p(entity | name) of the kb's candidate generator (``None`` when looked up by key)
    label: str | None
    label_en: str | None
    titles: dict[str, str]
    labels: dict[str, str]
    aliases: dict[str, list[str]]
    facts: list[tuple[str, str, str, str]] | None = field(default=None)

    def to_dict(self) -> JsonObject:
        data = asdict(self)
        if self.facts is None:
            data.pop("facts")
        return data


def lookup(
    db: EntityDB | str | os.PathLike[str] | None, query: str | None = None, *, lang: str = "en", key: str | None = None
) -> list[EntityDescription]:
    """The entities ``query`` may refer to in ``lang`` (title, redirect, label or alias), or the entity
    ``key`` with its facts; give one of the two. ``db``: anything :func:`kb.open_db` takes. An unknown
    key raises :class:`kb.errors.NotFoundError`."""
    if (query is None) == (key is None):
        raise OptionError(
            "give either {query} (with {lang}) or {key}, not both and not neither",
            options={
                "query": Option("a name as query=", "a QUERY"),
                "lang": Option("lang=", "--lang"),
                "key": Option("key=", "--key"),
            },
        )
    opened = open_db(db)
    try:
        return _describe(opened, query, lang, key)
    finally:
        if opened is not db:
            opened.close()


def _describe(db: EntityDB, query: str | None, lang: str, key: str | None) -> list[EntityDescription]:
    from kb.mentions.db_candidates import default_source

    matches = [(key, "key")] if key is not None else [(m.key, m.via) for m in db.lookup(lang, query)]  # type: ignore[arg-type]
    priors = {c.key: c.prior for c in default_source(db).candidates(lang, query)} if query is not None else {}
    qualified = qualified_names(db, [k for k, _ in matches], lang)
    out = []
    for k, via in matches:
        e = db.entity(k)
        facts = None
        if key is not None:
            rows = db.facts(subject=k)
            names = db.labels([f.object for f in rows], lang)
            facts = [
                (f.property, db.property_label(f.property, lang) or "", f.object, names.get(f.object, "")) for f in rows
            ]
        out.append(
            EntityDescription(
                k,
                via,
                e.kind,
                qualified[k],
                priors.get(k, 0.0 if query is not None else None),
                e.name(lang),
                e.name("en"),
                e.titles,
                e.labels,
                {code: list(v) for code, v in e.aliases.items()},
                facts,
            )
        )
    return out


#: The facts whose object qualifies an entity's name, most telling first: country (P17), continent (P30).
QUALIFIER_PROPERTIES = ("P17", "P30")


def qualified_names(db: EntityDB, keys: list[str], lang: str) -> dict[str, str]:
    """A name for each entity of ``keys`` in ``lang`` that tells them apart: "Cambridge (United Kingdom)",
    "Cambridge (Canada)".

    The name is the label in ``lang`` (else its page title, else the English one, else the key). It is
    qualified by the page title when that adds a qualifier ("Paris (mythology)"), else by the entity's
    country or continent (:data:`QUALIFIER_PROPERTIES`), else by its kind ("Chinese (language)");
    countries, continents and entities without any of these keep the plain name. Two keys that would
    still share a name get their key added: "Springfield (United States, Q...)".
    """
    return qualified_names_of_groups(db, [keys], lang)[0]


def qualified_names_of_groups(db: EntityDB, groups: list[list[str]], lang: str) -> list[dict[str, str]]:
    """:func:`qualified_names` of each group of keys (e.g. each mention's candidates: names tell apart the
    keys of one group), the kb read for all groups at once: three statements per 500 keys, not three per key."""
    keys = list(dict.fromkeys(k for group in groups for k in group))
    entities = db.entities(keys)
    placed = [k for k, e in entities.items() if e.kind not in ("country", "continent")]
    facts = db.facts_of(placed, QUALIFIER_PROPERTIES)
    first = {}  # key -> the object of its first qualifier property that has one
    for key, found in facts.items():
        for pid in QUALIFIER_PROPERTIES:
            objects = [f.object for f in found if f.property == pid]
            if objects:
                first[key] = objects[0]
                break
    others = db.entities(list(first.values()))
    plain: dict[str, str] = {}
    for key in keys:
        entity = entities.get(key)
        if entity is None:
            plain[key] = key
            continue
        base = entity.name(lang) or key
        title = entity.titles.get(lang)
        if title and title != base and title.startswith(base) and len(title) > len(base) + 2:
            plain[key] = title
            continue
        qualifier = None
        if key in first:
            other = others.get(first[key])
            qualifier = (other.name(lang) if other else None) or first[key]
        elif entity.kind not in ("country", "continent") and entity.kind:
            qualifier = entity.kind
        plain[key] = f"{base} ({qualifier})" if qualifier else base
    return [_told_apart({key: plain[key] for key in dict.fromkeys(group)}) for group in groups]


def _told_apart(out: dict[str, str]) -> dict[str, str]:
    """``out`` with the key added to names that two keys share."""
    seen: dict[str, list[str]] = {}
    for key, name in out.items():
        seen.setdefault(name, []).append(key)
    for name, same in seen.items():
        if len(same) > 1:
            for key in same:
                out[key] = f"{name[:-1]}, {key})" if name.endswith(")") else f"{name} ({key})"
    return out
