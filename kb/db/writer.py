"""Writing an entity database. Obtained from :meth:`kb.EntityDB.create`, never directly."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from kb.db.schema import check_key, check_pid
from kb.db.templates import parse_template
from kb.db.titles import normalize_title
from kb.languages import check_language


class EntityDBWriter:
    """Adds rows to a database under construction (one open transaction).

    Titles are normalised (:func:`kb.db.titles.normalize_title`); templates are
    validated; keys and property ids are checked. Counts (anchors, surfaces,
    entity links) add up when the same row is written twice.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, args: tuple[object, ...] = ()) -> sqlite3.Cursor:
        """Run one SQL statement in the writer's transaction (for updates the methods do not cover)."""
        return self._conn.execute(sql, args)

    def add_languages(self, langs: Iterable[str]) -> None:
        self._conn.executemany(
            "INSERT OR IGNORE INTO languages(lang) VALUES (?)", [(check_language(l),) for l in langs]
        )

    def add_entity(self, key: str, kind: str | None = None) -> None:
        self._conn.execute(
            "INSERT INTO entities(key, kind) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET kind = coalesce(excluded.kind, kind)",
            (check_key(key), kind),
        )

    def add_title(self, lang: str, title: str, key: str) -> None:
        """Set the page title of ``key`` in ``lang`` (a title names one entity per language)."""
        self._conn.execute(
            "INSERT INTO titles(lang, title, entity) VALUES (?, ?, ?) "
            "ON CONFLICT(lang, title) DO UPDATE SET entity = excluded.entity",
            (lang, normalize_title(title), key),
        )

    def add_redirect(self, lang: str, source: str, target: str) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO redirects(lang, source, target) VALUES (?, ?, ?)",
            (lang, normalize_title(source), normalize_title(target)),
        )

    def add_label(self, key: str, lang: str, label: str) -> None:
        """Set the label of ``key`` in ``lang``, replacing an earlier one."""
        self._conn.execute("DELETE FROM names WHERE entity = ? AND lang = ? AND kind = 'label'", (key, lang))
        self._conn.execute("INSERT INTO names(lang, name, entity, kind) VALUES (?, ?, ?, 'label')", (lang, label, key))

    def add_aliases(self, key: str, lang: str, aliases: Iterable[str]) -> None:
        self._conn.executemany(
            "INSERT OR IGNORE INTO names(lang, name, entity, kind) VALUES (?, ?, ?, 'alias')",
            [(lang, a, key) for a in aliases],
        )

    def add_property(
        self,
        pid: str,
        *,
        datatype: str | None = None,
        labels: Mapping[str, str] | None = None,
        replace_labels: bool = True,
    ) -> None:
        """Add a property (keeping a known datatype) with labels, replacing existing ones unless not
        ``replace_labels``."""
        self._conn.execute(
            "INSERT INTO properties(pid, datatype) VALUES (?, ?) "
            "ON CONFLICT(pid) DO UPDATE SET datatype = coalesce(excluded.datatype, datatype)",
            (check_pid(pid), datatype),
        )
        self._conn.executemany(
            f"INSERT OR {'REPLACE' if replace_labels else 'IGNORE'} INTO property_labels(pid, lang, label) "
            "VALUES (?, ?, ?)",
            [(pid, lang, label) for lang, label in (labels or {}).items()],
        )

    def add_fact(self, subject: str, pid: str, obj: str) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO facts(subject, property, object) VALUES (?, ?, ?)",
            (subject, check_pid(pid), obj),
        )

    def add_template(self, pid: str, lang: str, template: str) -> None:
        """Store the cloze template of ``pid`` in ``lang`` after validating it."""
        parse_template(template, where=f"template {pid}/{lang}")
        self._conn.execute(
            "INSERT OR REPLACE INTO templates(property, lang, template) VALUES (?, ?, ?)",
            (check_pid(pid), lang, template),
        )

    def add_anchor(self, lang: str, surface: str, key: str, count: int) -> None:
        """Count ``count`` links with anchor text ``surface`` to ``key``."""
        self._conn.execute(
            "INSERT INTO anchors(lang, surface, entity, count) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(lang, surface, entity) DO UPDATE SET count = count + excluded.count",
            (lang, surface, key, count),
        )

    def add_surface(self, lang: str, surface: str, *, link_docs: int, text_docs: int) -> None:
        """Count documents where ``surface`` is a link (``link_docs``) and where it occurs at all."""
        self._conn.execute(
            "INSERT INTO surfaces(lang, surface, link_docs, text_docs) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(lang, surface) DO UPDATE SET link_docs = link_docs + excluded.link_docs, "
            "text_docs = text_docs + excluded.text_docs",
            (lang, surface, link_docs, text_docs),
        )

    def add_entity_links(self, key: str, lang: str, count: int) -> None:
        """Count ``count`` hyperlinks to ``key`` in the ``lang`` Wikipedia."""
        self._conn.execute(
            "INSERT INTO entity_links(entity, lang, count) VALUES (?, ?, ?) "
            "ON CONFLICT(entity, lang) DO UPDATE SET count = count + excluded.count",
            (key, lang, count),
        )

    def add_source(self, kind: str, name: str, *, lang: str | None = None, **detail: Any) -> None:
        """Record an input of this build (provenance), e.g. ``add_source("package", "babel", version="2.18")``."""
        self._conn.execute(
            "INSERT INTO sources(kind, name, lang, detail) VALUES (?, ?, ?, ?)",
            (kind, name, lang, json.dumps(detail, ensure_ascii=False, sort_keys=True)),
        )

    def finish(self) -> None:
        """Compute the per-language statistics shown by ``mluke kb info``."""
        stats = compute_stats(self._conn)
        self._conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('stats', ?)", (json.dumps(stats, sort_keys=True),)
        )


def compute_stats(conn: sqlite3.Connection) -> dict[str, Any]:
    """Totals and per-language counts of entities, titles, labels, aliases, facts, templates.

    A fact counts for a language when both its subject and its object have a
    label there: that is a fact one can probe in that language.
    """
    q = conn.execute
    per_lang: dict[str, dict[str, int]] = {}

    def put(rows: Iterable[tuple[str, int]], name: str) -> None:
        for lang, n in rows:
            per_lang.setdefault(lang, {})[name] = n

    put(q("SELECT lang, COUNT(*) FROM titles GROUP BY lang"), "titles")
    labels = q("SELECT lang, COUNT(*) FROM names WHERE kind = 'label' GROUP BY lang").fetchall()
    put(labels, "labels")
    put(q("SELECT lang, COUNT(*) FROM names WHERE kind = 'alias' GROUP BY lang"), "aliases")
    # A merge of the two (entity, lang) indexes instead of sorting every row (2x faster at 100k
    # entities).
    put(
        q(
            "SELECT lang, COUNT(*) FROM ("
            "SELECT entity, lang FROM titles UNION SELECT entity, lang FROM names ORDER BY 1, 2) GROUP BY lang"
        ),
        "entities",
    )
    put(_facts_per_language(conn, [lang for lang, _ in labels]), "facts")
    put(q("SELECT lang, COUNT(*) FROM templates GROUP BY lang"), "templates")
    put(q("SELECT lang, COUNT(*) FROM redirects GROUP BY lang"), "redirects")
    put(q("SELECT lang, COUNT(*) FROM anchors GROUP BY lang"), "anchors")
    langs = [r[0] for r in q("SELECT lang FROM languages ORDER BY lang")]
    for lang in langs:
        per_lang.setdefault(lang, {})
    keys = ("entities", "titles", "labels", "aliases", "facts", "templates", "redirects", "anchors")
    return {
        "entities": q("SELECT COUNT(*) FROM entities").fetchone()[0],
        "facts": q("SELECT COUNT(*) FROM facts").fetchone()[0],
        "properties": q("SELECT COUNT(*) FROM properties").fetchone()[0],
        "languages": {lang: {k: per_lang[lang].get(k, 0) for k in keys} for lang in sorted(per_lang)},
    }


#: Languages per bit mask in :func:`_facts_per_language` (SQLite integers have 64 bits).
_MASK_BITS = 62


def _facts_per_language(conn: sqlite3.Connection, langs: list[str]) -> list[tuple[str, int]]:
    """Per language, the facts whose subject and object both have a label in it.

    Each entity gets a bit mask of its label languages (one ordered pass over the label
    index), and each fact counts the bits its two masks share: a join of the facts with a
    table of one row per entity, instead of looking up both ends' labels per language,
    whose random reads grew 5x from 100k to 200k entities once the index outgrew the cache.
    """
    out: list[tuple[str, int]] = []
    q = conn.execute
    for start in range(0, len(langs), _MASK_BITS):
        group = langs[start : start + _MASK_BITS]
        q("CREATE TEMP TABLE stat_bits(lang TEXT PRIMARY KEY, bit INTEGER NOT NULL) WITHOUT ROWID")
        q("CREATE TEMP TABLE stat_masks(entity TEXT PRIMARY KEY, mask INTEGER NOT NULL) WITHOUT ROWID")
        try:
            conn.executemany("INSERT INTO temp.stat_bits VALUES (?, ?)", [(l, i) for i, l in enumerate(group)])
            q(
                "INSERT INTO temp.stat_masks SELECT n.entity, SUM(1 << b.bit) "
                "FROM names n INDEXED BY one_label_per_language CROSS JOIN temp.stat_bits b "
                "WHERE n.kind = 'label' AND b.lang = n.lang GROUP BY n.entity"
            )
            sums = ", ".join(f"SUM((m >> {i}) & 1)" for i in range(len(group)))
            row = q(
                f"SELECT {sums} FROM (SELECT s.mask & o.mask AS m FROM facts f "
                "JOIN temp.stat_masks s ON s.entity = f.subject JOIN temp.stat_masks o ON o.entity = f.object)"
            ).fetchone()
            out += [(lang, n or 0) for lang, n in zip(group, row)]
        finally:
            q("DROP TABLE temp.stat_bits")
            q("DROP TABLE temp.stat_masks")
    return out
