"""The SQLite schema of the inter-language entity database (format version 1).

Entities are keyed by a stable external key: the Wikidata QID (``Q17``) or,
where no QID exists, a source-prefixed key (``geonames:1850147``,
``iso4217:JPY``). Keys are stored as text everywhere, so every row is
meaningful on its own and no id depends on the order in which a dump was read.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from kb.db.sqlite import atomic_build
from kb.errors import InputFormatError

if TYPE_CHECKING:
    from kb.jsontypes import JsonValue

FORMAT = "mluke-entity-db"
FORMAT_VERSION = 1

TABLES = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE languages(lang TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE entities(key TEXT PRIMARY KEY, kind TEXT) WITHOUT ROWID;
-- Wikipedia article titles (or, without Wikipedia, one unique display title) per language.
CREATE TABLE titles(
    lang TEXT NOT NULL, title TEXT NOT NULL, entity TEXT NOT NULL,
    PRIMARY KEY(lang, title)) WITHOUT ROWID;
CREATE TABLE redirects(
    lang TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
    PRIMARY KEY(lang, source)) WITHOUT ROWID;
-- Labels (one per entity and language) and aliases (any number).
CREATE TABLE names(
    lang TEXT NOT NULL, name TEXT NOT NULL, entity TEXT NOT NULL,
    kind TEXT NOT NULL CHECK(kind IN ('label', 'alias')),
    PRIMARY KEY(lang, name, entity, kind)) WITHOUT ROWID;
-- Mention statistics: anchor text -> entity -> number of links.
CREATE TABLE anchors(
    lang TEXT NOT NULL, surface TEXT NOT NULL, entity TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY(lang, surface, entity)) WITHOUT ROWID;
-- Documents in which a surface form occurs as a link, and as text at all (link probability).
CREATE TABLE surfaces(
    lang TEXT NOT NULL, surface TEXT NOT NULL, link_docs INTEGER NOT NULL, text_docs INTEGER NOT NULL,
    PRIMARY KEY(lang, surface)) WITHOUT ROWID;
-- Incoming hyperlinks per entity and language (ranks the entity vocabulary).
CREATE TABLE entity_links(
    entity TEXT NOT NULL, lang TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY(entity, lang)) WITHOUT ROWID;
CREATE TABLE properties(pid TEXT PRIMARY KEY, datatype TEXT) WITHOUT ROWID;
CREATE TABLE property_labels(
    pid TEXT NOT NULL, lang TEXT NOT NULL, label TEXT NOT NULL,
    PRIMARY KEY(pid, lang)) WITHOUT ROWID;
CREATE TABLE facts(
    subject TEXT NOT NULL, property TEXT NOT NULL, object TEXT NOT NULL,
    PRIMARY KEY(property, subject, object)) WITHOUT ROWID;
CREATE TABLE templates(
    property TEXT NOT NULL, lang TEXT NOT NULL, template TEXT NOT NULL,
    PRIMARY KEY(property, lang)) WITHOUT ROWID;
-- Where the data came from: one row per input (dump file, package, API call).
CREATE TABLE sources(
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, lang TEXT,
    detail TEXT NOT NULL DEFAULT '{}');
"""
#: Secondary indexes; bulk builds drop them while loading and create them afterwards.
INDEXES: tuple[str, ...] = (
    "CREATE INDEX titles_by_entity ON titles(entity, lang)",
    "CREATE INDEX names_by_entity ON names(entity, lang)",
    "CREATE UNIQUE INDEX one_label_per_language ON names(entity, lang) WHERE kind = 'label'",
    "CREATE INDEX facts_by_subject ON facts(subject, property)",
    "CREATE INDEX facts_by_object ON facts(object, property)",
)
SCHEMA = TABLES + "".join(f"{i};\n" for i in INDEXES)

_QID_RE = re.compile(r"^[QP][1-9][0-9]*$")
_PREFIXED_RE = re.compile(r"^[a-z][a-z0-9_.-]*:[^\s:][^\s]*$")
_PID_RE = re.compile(r"^P[1-9][0-9]*$")


def building(
    path: str | os.PathLike[str],
    *,
    overwrite: bool,
    provenance: Mapping[str, JsonValue] | None = None,
    tables: str = SCHEMA,
) -> AbstractContextManager[sqlite3.Connection]:
    """A new entity database file at ``path``, built atomically (:func:`kb.db.sqlite.atomic_build`) with this
    format and version.

    Args:
        path: the file to write.
        overwrite: replace an existing file.
        provenance: what the file records about where it came from.
        tables: the schema to apply; default: :data:`SCHEMA` (tables and indexes; a bulk build that creates the
            indexes after loading passes :data:`TABLES`).

    Returns:
        The context manager yielding the connection.
    """
    return atomic_build(
        path,
        fmt=FORMAT,
        version=FORMAT_VERSION,
        schema=tables,
        overwrite=overwrite,
        provenance=provenance,
    )


def is_key(key: object) -> bool:
    """Whether ``key`` has the form of an entity key: a QID (``Q17``) or a source-prefixed key
    (``geonames:1850147``)."""
    return isinstance(key, str) and bool(_QID_RE.match(key) or _PREFIXED_RE.match(key))


def check_key(key: str) -> str:
    """Return ``key`` if it is a QID (``Q17``) or a source-prefixed key (``geonames:1850147``)."""
    if not is_key(key):
        raise InputFormatError(
            f"{key!r} is not an entity key: expected a Wikidata QID such as 'Q17' "
            "or a source-prefixed key such as 'geonames:1850147'"
        )
    return key


def check_pid(pid: str) -> str:
    """Return ``pid`` if it is a Wikidata property id such as ``P36``."""
    if not isinstance(pid, str) or not _PID_RE.match(pid):
        raise InputFormatError(f"{pid!r} is not a Wikidata property id: expected e.g. 'P36'")
    return pid
