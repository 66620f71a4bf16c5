"""``EntityDB``: the inter-language entity database (read side).

One SQLite file maps Wikipedia articles in many languages onto one shared
entity inventory keyed by Wikidata QIDs (or source-prefixed keys). Opening is
instant and loads nothing into Python; any number of processes may read one
file; an ``EntityDB`` can be pickled (it reopens by path).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from kb.db import schema
from kb.db.rows import Entity, Fact, Match
from kb.db.sqlite import SqliteStore, chunked, open_for_update
from kb.db.templates import Template, parse_template
from kb.db.titles import normalize_title
from kb.db.writer import EntityDBWriter
from kb.errors import NotFoundError
from kb.languages import check_language

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject, JsonValue

MAX_REDIRECT_HOPS = 16


class EntityDB(SqliteStore):
    """Read access to an entity database file written by :meth:`EntityDB.create`.

    >>> db = EntityDB("kb.sqlite")                     # doctest: +SKIP
    >>> db.lookup("ja", "東京")                         # doctest: +SKIP
    [Match(key='geonames:1850147', via='title')]
    """

    FORMAT = schema.FORMAT
    FORMAT_VERSION = schema.FORMAT_VERSION
    WHAT = "an mluke entity database"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.languages: tuple[str, ...] = tuple(
            r[0] for r in self._conn.execute("SELECT lang FROM languages ORDER BY lang")
        )

    # -- construction ---------------------------------------------------------------
    @classmethod
    @contextlib.contextmanager
    def create(
        cls, path: str | os.PathLike[str], *, overwrite: bool = False, provenance: Mapping[str, JsonValue] | None = None
    ) -> Iterator[EntityDBWriter]:
        """Build a new database at ``path``; the file appears only when the block ends cleanly.

        >>> with EntityDB.create("kb.sqlite") as w:        # doctest: +SKIP
        ...     w.add_entity("Q17"); w.add_title("ja", "日本", "Q17")
        """
        with schema.building(path, overwrite=overwrite, provenance=provenance) as conn:
            writer = EntityDBWriter(conn)
            yield writer
            writer.finish()

    @classmethod
    @contextlib.contextmanager
    def update(cls, path: str | os.PathLike[str]) -> Iterator[EntityDBWriter]:
        """Change an existing database file in place, in one transaction: everything the block
        writes, or nothing if it raises; the statistics are recomputed at the end."""
        cls(path).close()  # refuses anything but a complete database of this version
        conn = open_for_update(path)  # WAL mode: readers go on reading meanwhile (see kb.db.sqlite)
        try:
            conn.execute("BEGIN IMMEDIATE")
            writer = EntityDBWriter(conn)
            yield writer
            writer.finish()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()

    def __repr__(self) -> str:
        return f"EntityDB({str(self.path)!r}, entities={len(self)}, languages={len(self.languages)})"

    def __len__(self) -> int:
        return int(cast(int, self.stats.get("entities", 0)))  # the count written by the builder

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._one("SELECT 1 FROM entities WHERE key = ?", key) is not None

    # -- metadata -------------------------------------------------------------------
    @property
    def stats(self) -> JsonObject:
        """Totals and per-language counts computed when the database was built."""
        return cast("dict[str, Any]", json.loads(self.meta.get("stats", "{}")))

    def sources(self) -> list[JsonObject]:
        """The inputs this database was built from (dump files, packages, API calls)."""
        rows = self._conn.execute("SELECT kind, name, lang, detail FROM sources ORDER BY id")
        return [{"kind": k, "name": n, "lang": l, **json.loads(d)} for k, n, l, d in rows]

    def info(self) -> JsonObject:
        """Format, provenance, sources and statistics, as shown by ``mluke kb info``."""
        return {
            "path": str(self.path),
            "format": self.meta["format"],
            "format_version": int(self.meta["format_version"]),
            "created": self.meta.get("created"),
            "provenance": self.provenance,
            "sources": self.sources(),
            **self.stats,
        }

    # -- entities and names ---------------------------------------------------------
    def _one(self, sql: str, *args: Any) -> Any:
        row = self._conn.execute(sql, args).fetchone()
        return None if row is None else row[0]

    def _check_lang(self, lang: str) -> str:
        return check_language(lang, self.languages)

    def entity(self, key: str) -> Entity:
        """All titles, labels and aliases of ``key``.

        One statement reads them all, so they come from one state of the file even while
        :func:`kb.add_entities` replaces them in another process.

        Args:
            key: the entity key (``"Q17"``, ``"geonames:1850147"``).

        Returns:
            The entity.

        Raises:
            NotFoundError: no such entity.
        """
        rows = self._conn.execute(
            "SELECT 0, kind, NULL, NULL FROM entities WHERE key = ?1 "
            "UNION ALL SELECT 1, lang, title, NULL FROM titles WHERE entity = ?1 "
            "UNION ALL SELECT 2, lang, name, kind FROM names WHERE entity = ?1 ORDER BY 1, 2, 3",
            (key,),
        ).fetchall()
        if not rows or rows[0][0] != 0:
            raise NotFoundError(f"no entity {key!r} in {self.path}")
        return _entity(key, rows[0][1], [(key, *r) for r in rows[1:]])

    def get(self, key: str) -> Entity | None:
        """Like :meth:`entity` but returns ``None`` for an unknown key."""
        try:
            return self.entity(key)
        except NotFoundError:
            return None

    def entities(self, keys: list[str] | tuple[str, ...]) -> dict[str, Entity]:
        """:meth:`entity` of many keys, one statement per 500 keys; unknown keys are left out."""
        out: dict[str, Entity] = {}
        for part in chunked(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(part))
            rows = self._conn.execute(
                f"SELECT key, 0, kind, NULL, NULL FROM entities WHERE key IN ({marks}) "
                f"UNION ALL SELECT entity, 1, lang, title, NULL FROM titles WHERE entity IN ({marks}) "
                f"UNION ALL SELECT entity, 2, lang, name, kind FROM names WHERE entity IN ({marks}) "
                "ORDER BY 1, 2, 3, 4",
                (*part, *part, *part),
            ).fetchall()
            start = 0
            for end in range(1, len(rows) + 1):
                if end == len(rows) or rows[end][0] != rows[start][0]:
                    if rows[start][1] == 0:
                        out[rows[start][0]] = _entity(rows[start][0], rows[start][2], rows[start + 1 : end])
                    start = end
        return out

    def kinds(self, keys: list[str] | tuple[str, ...]) -> dict[str, str | None]:
        """The kind of each known key (``None``: none recorded), one statement per 500 keys."""
        out: dict[str, str | None] = {}
        for part in chunked(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(part))
            out.update(self._conn.execute(f"SELECT key, kind FROM entities WHERE key IN ({marks})", part))
        return out

    def facts_of(
        self, subjects: list[str] | tuple[str, ...], properties: tuple[str, ...] | None = None
    ) -> dict[str, list[Fact]]:
        """:meth:`facts` of many subjects (of the given properties only, if any), one statement per 500
        subjects: {subject: facts sorted by (property, object)}; every subject is a key, with no facts too."""
        keys = list(dict.fromkeys(subjects))
        out: dict[str, list[Fact]] = {k: [] for k in keys}
        only = f" AND property IN ({','.join('?' * len(properties))})" if properties else ""
        for part in chunked(keys):
            marks = ",".join("?" * len(part))
            rows = self._conn.execute(
                f"SELECT subject, property, object FROM facts WHERE subject IN ({marks}){only} "
                "ORDER BY property, subject, object",
                (*part, *(properties or ())),
            )
            for r in rows:
                out[r[0]].append(Fact(*r))
        return out

    def titles(self, key: str) -> dict[str, str]:
        """Page titles of ``key`` in every language, ``{lang: title}``."""
        return dict(self._conn.execute("SELECT lang, title FROM titles WHERE entity = ? ORDER BY lang", (key,)))

    def label(self, key: str, lang: str, fallback: tuple[str, ...] = ()) -> str | None:
        """The label of ``key`` in ``lang`` (or the first fallback language that has one)."""
        for code in (lang, *fallback):
            name = self._one("SELECT name FROM names WHERE entity = ? AND lang = ? AND kind = 'label'", key, code)
            if name is not None:
                return cast(str, name)
        return None

    def labels(self, keys: list[str], lang: str) -> dict[str, str]:
        """Labels of many entities in one language (entities without one are left out)."""
        out: dict[str, str] = {}
        for part in chunked(keys):
            marks = ",".join("?" * len(part))
            out.update(
                self._conn.execute(
                    f"SELECT entity, name FROM names WHERE lang = ? AND kind = 'label' AND entity IN ({marks})",
                    (lang, *part),
                )
            )
        return out

    def keys(self, kind: str | None = None) -> Iterator[str]:
        """Iterate over entity keys (of one ``kind`` if given), in key order."""
        if kind is None:
            rows = self._conn.execute("SELECT key FROM entities ORDER BY key")
        else:
            rows = self._conn.execute("SELECT key FROM entities WHERE kind = ? ORDER BY key", (kind,))
        return (r[0] for r in rows)

    # -- titles, redirects and look-ups ---------------------------------------------------
    def resolve_redirect(self, lang: str, title: str) -> str | None:
        """Follow redirects from ``title`` to an existing page title.

        Returns ``None`` for a missing page, a redirect to a missing page, a
        loop, or a chain longer than ``MAX_REDIRECT_HOPS``.
        """
        title = normalize_title(title)
        seen: set[str] = set()
        while len(seen) <= MAX_REDIRECT_HOPS:
            if self._one("SELECT 1 FROM titles WHERE lang = ? AND title = ?", lang, title):
                return title
            target = self._one("SELECT target FROM redirects WHERE lang = ? AND source = ?", lang, title)
            if target is None or target in seen or target == title:
                return None
            seen.add(title)
            title = target
        return None

    def resolve_title(self, lang: str, title: str) -> str | None:
        """Entity key of the page ``title`` in ``lang`` after redirects, or ``None``."""
        self._check_lang(lang)
        final = self.resolve_redirect(lang, title)
        if final is None:
            return None
        return cast("str | None", self._one("SELECT entity FROM titles WHERE lang = ? AND title = ?", lang, final))

    def lookup(self, lang: str, name: str, *, aliases: bool = True) -> list[Match]:
        """Entities that ``name`` may refer to in ``lang``: title (after redirects), labels, aliases.

        Args:
            lang: the language code.
            name: the name, as written (titles are normalised as MediaWiki does).
            aliases: also match aliases.

        Returns:
            Title/redirect matches first, then labels, then aliases; each entity once.
        """
        self._check_lang(lang)
        matches: list[Match] = []
        norm = normalize_title(name)
        key = self._one("SELECT entity FROM titles WHERE lang = ? AND title = ?", lang, norm)
        if key is not None:
            matches.append(Match(key, "title"))
        else:
            key = self.resolve_title(lang, norm)
            if key is not None:
                matches.append(Match(key, "redirect"))
        kinds = "('label', 'alias')" if aliases else "('label')"
        rows = self._conn.execute(
            f"SELECT entity, kind FROM names WHERE lang = ? AND name = ? AND kind IN {kinds} "
            "ORDER BY kind = 'alias', entity",
            (lang, name),
        )
        seen = {m.key for m in matches}
        for key, kind in rows:
            if key not in seen:
                seen.add(key)
                matches.append(Match(key, kind))
        return matches

    def find_entities(self, items: list[str] | tuple[str, ...], lang: str) -> list[str | None]:
        """Entity keys of ``items``, each an entity key or a name in ``lang`` (its first :meth:`lookup`
        match); ``None`` for an item that is neither."""
        keys: list[str | None] = []
        for item in items:
            if schema.is_key(item) and item in self:
                keys.append(item)
            else:
                matches = self.lookup(lang, item)
                keys.append(matches[0].key if matches else None)
        return keys

    def resolve_entities(self, items: list[str] | tuple[str, ...], lang: str, what: str = "entity") -> list[str]:
        """Like :meth:`find_entities`, but an item that is neither a key nor a name raises
        :class:`NotFoundError` naming it as ``what`` (e.g. "candidate 'Atlantis'")."""
        keys = self.find_entities(items, lang)
        for item, key in zip(items, keys):
            if key is None:
                raise NotFoundError(f"{what} {item!r}: no entity with that key or {lang!r} name in {self.path}")
        return keys  # type: ignore[return-value]

    # -- facts, properties and templates -------------------------------------------------
    def facts(self, subject: str | None = None, property: str | None = None, object: str | None = None) -> list[Fact]:
        """Facts matching every given field, sorted by (property, subject, object).

        Args:
            subject: the subject's entity key, or None for any.
            property: the Wikidata property (``"P36"``), or None for any.
            object: the object's entity key, or None for any.

        Returns:
            The facts.
        """
        where, args = [], []
        for col, val in (("subject", subject), ("property", property), ("object", object)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT subject, property, object FROM facts"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY property, subject, object"
        return [Fact(*r) for r in self._conn.execute(sql, args)]

    def objects(self, subject: str, property: str) -> list[str]:
        return [f.object for f in self.facts(subject=subject, property=property)]

    def subjects(self, property: str) -> list[str]:
        """Distinct subjects that have at least one fact under ``property``."""
        rows = self._conn.execute("SELECT DISTINCT subject FROM facts WHERE property = ? ORDER BY subject", (property,))
        return [r[0] for r in rows]

    def has_facts(self, property: str) -> bool:
        """Whether any fact has this property (one index probe)."""
        return self._one("SELECT 1 FROM facts WHERE property = ? LIMIT 1", property) is not None

    def has_templates(self, property: str) -> bool:
        """Whether the kb has a template for this property in any language."""
        return self._one("SELECT 1 FROM templates WHERE property = ? LIMIT 1", property) is not None

    def properties(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT pid FROM properties ORDER BY CAST(substr(pid, 2) AS INTEGER)")]

    def property_label(self, pid: str, lang: str = "en") -> str | None:
        return cast("str | None", self._one("SELECT label FROM property_labels WHERE pid = ? AND lang = ?", pid, lang))

    def template(self, property: str, lang: str) -> Template:
        """The cloze template of ``property`` in ``lang``.

        Args:
            property: the Wikidata property (``"P36"``).
            lang: the language code.

        Returns:
            The template, with its [X] and [Y].

        Raises:
            NotFoundError: the database has no such template.
        """
        self._check_lang(lang)
        text = self._one("SELECT template FROM templates WHERE property = ? AND lang = ?", property, lang)
        if text is None:
            have = [
                r[0]
                for r in self._conn.execute("SELECT lang FROM templates WHERE property = ? ORDER BY lang", (property,))
            ]
            raise NotFoundError(
                f"no template for {property} in {lang!r}"
                + (f" (templates exist in: {', '.join(have)})" if have else " (no template in any language)")
            )
        return parse_template(text, where=f"template {property}/{lang} in {self.path}")

    def templates(self, lang: str | None = None) -> dict[tuple[str, str], str]:
        """All templates as ``{(property, lang): text}``, optionally for one language."""
        if lang is None:
            rows = self._conn.execute("SELECT property, lang, template FROM templates")
        else:
            rows = self._conn.execute("SELECT property, lang, template FROM templates WHERE lang = ?", (lang,))
        return {(p, l): t for p, l, t in rows}

    # -- mention statistics ---------------------------------------------------------------
    def anchor_counts(self, lang: str, surface: str) -> list[tuple[str, int]]:
        """``[(entity, link count)]`` for anchor text ``surface``, most linked first."""
        rows = self._conn.execute(
            "SELECT entity, count FROM anchors WHERE lang = ? AND surface = ? ORDER BY count DESC, entity",
            (lang, surface),
        )
        return list(rows)

    def link_probability(self, lang: str, surface: str) -> float | None:
        """Share of documents containing ``surface`` in which it is a link (LUKE, appendix C).

        ``None`` when the surface was never counted (no statistics, not zero).
        """
        row = self._conn.execute(
            "SELECT link_docs, text_docs FROM surfaces WHERE lang = ? AND surface = ?", (lang, surface)
        ).fetchone()
        if row is None:
            return None
        link_docs, text_docs = cast("tuple[int, int]", row)
        return link_docs / max(text_docs, link_docs, 1)

    def entity_link_counts(self, key: str) -> dict[str, int]:
        """Incoming hyperlinks to ``key`` per language."""
        return dict(self._conn.execute("SELECT lang, count FROM entity_links WHERE entity = ?", (key,)))

    # -- vocabulary support ---------------------------------------------------------------
    def vocab_ranking(self, languages: tuple[str, ...], min_languages: int, size: int) -> list[tuple[str, int]]:
        """``[(key, hyperlink count)]`` of the ``size`` most linked entities that have a title
        in at least ``min_languages`` of ``languages``; ties broken by key."""
        marks = ",".join("?" * len(languages))
        sql = (
            f"WITH present AS (SELECT entity, COUNT(DISTINCT lang) AS n FROM titles WHERE lang IN ({marks}) "
            f"GROUP BY entity HAVING n >= ?), "
            f"counts AS (SELECT entity, SUM(count) AS c FROM entity_links WHERE lang IN ({marks}) GROUP BY entity) "
            "SELECT p.entity, COALESCE(c.c, 0) AS cnt FROM present p LEFT JOIN counts c USING (entity) "
            "ORDER BY cnt DESC, p.entity LIMIT ?"
        )
        return list(self._conn.execute(sql, (*languages, min_languages, *languages, size)))

    def iter_titles(self, languages: tuple[str, ...] | None = None) -> Iterator[tuple[str, str, str]]:
        """Stream ``(lang, title, key)`` rows, optionally for some languages only."""
        if languages is None:
            return iter(self._conn.execute("SELECT lang, title, entity FROM titles"))
        marks = ",".join("?" * len(languages))
        return iter(self._conn.execute(f"SELECT lang, title, entity FROM titles WHERE lang IN ({marks})", languages))


def _entity(key: str, kind: str | None, rows: list[Any]) -> Entity:
    """An :class:`Entity` from its (key, part, lang, name, name kind) rows: part 1 titles, part 2 names, sorted."""
    titles: dict[str, str] = {}
    labels: dict[str, str] = {}
    aliases: dict[str, list[str]] = {}
    for _, part, lang, name, name_kind in rows:
        if part == 1:
            titles[lang] = name
        elif name_kind == "label":
            labels[lang] = name
        else:
            aliases.setdefault(lang, []).append(name)
    return Entity(key, kind, titles, labels, {k: tuple(v) for k, v in aliases.items()})
