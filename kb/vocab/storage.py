"""The storage of entity vocabulary files: the SQLite format (tables, special entities, defaults), the row
type :class:`VocabEntry`, and the atomic writer that every way of making a vocabulary (build, import) goes
through."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb.db.sqlite import atomic_build
from kb.errors import InputFormatError

if TYPE_CHECKING:
    from kb.db.database import EntityDB
    from kb.jsontypes import JsonValue

FORMAT = "mluke-entity-vocab"
FORMAT_VERSION = 1
PAD = "[PAD]"
UNK = "[UNK]"
MASK = "[MASK]"
MASK2 = "[MASK2]"
#: Special entities, in the order a newly built vocabulary gives them ids 0-3.
SPECIAL_ENTITIES: tuple[str, ...] = (PAD, UNK, MASK, MASK2)
DEFAULT_SIZE = 1_200_000
DEFAULT_MIN_LANGUAGES = 3

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- One row per id. key: the entity key (QID) when known; special: '[MASK]' etc.
CREATE TABLE entries(id INTEGER PRIMARY KEY, key TEXT, special TEXT, count INTEGER NOT NULL DEFAULT 0);
CREATE TABLE names(lang TEXT NOT NULL, title TEXT NOT NULL, id INTEGER NOT NULL,
                   PRIMARY KEY(lang, title)) WITHOUT ROWID;
"""
INDEXES = """
CREATE INDEX names_by_id ON names(id);
CREATE INDEX entries_by_key ON entries(key) WHERE key IS NOT NULL;
CREATE UNIQUE INDEX entries_by_special ON entries(special) WHERE special IS NOT NULL;
"""


@dataclass(frozen=True)
class VocabEntry:
    """One vocabulary id: its entity key (if known), special name, count and titles."""

    id: int
    key: str | None
    special: str | None
    count: int
    names: tuple[tuple[str, str], ...]  # ((lang, title), ...)

    def title(self, lang: str) -> str | None:
        return next((t for l, t in self.names if l == lang), None)


def write_entries(
    path: str | os.PathLike[str],
    entries: Iterable[tuple[int, str | None, str | None, int, Iterable[tuple[str, str]]]],
    *,
    overwrite: bool,
    provenance: Mapping[str, JsonValue],
    db: EntityDB | None = None,
) -> None:
    """Write ``(id, key, special, count, names)`` rows atomically; reject duplicate names or ids.

    Args:
        path: the vocabulary file to write.
        entries: the rows, in any order.
        overwrite: replace an existing file.
        provenance: what the file records about where it came from.
        db: give ids without a key the one their titles resolve to in this database.

    Raises:
        InputFormatError: an id or a (language, title) appears twice, or a special entity has two ids.
    """
    with atomic_build(
        path, fmt=FORMAT, version=FORMAT_VERSION, schema=SCHEMA, overwrite=overwrite, provenance=provenance
    ) as conn:
        ins_entry = "INSERT INTO entries(id, key, special, count) VALUES (?, ?, ?, ?)"
        ins_name = "INSERT INTO names(lang, title, id) VALUES (?, ?, ?)"
        batch_e: list[tuple[object, ...]] = []
        batch_n: list[tuple[object, ...]] = []
        for id_, key, special, count, names in entries:
            batch_e.append((id_, key, special, count))
            batch_n.extend((l, t, id_) for l, t in names)
            if len(batch_n) > 50_000:
                flush(conn, ins_entry, batch_e, ins_name, batch_n, path)
        flush(conn, ins_entry, batch_e, ins_name, batch_n, path)
        if db is not None:
            attach_keys(conn, db)
        create_indexes(conn, path)


def flush(
    conn: sqlite3.Connection,
    ins_entry: str,
    batch_e: list[tuple[object, ...]],
    ins_name: str,
    batch_n: list[tuple[object, ...]],
    path: str | os.PathLike[str],
) -> None:
    try:
        conn.executemany(ins_entry, batch_e)
        conn.executemany(ins_name, batch_n)
    except sqlite3.IntegrityError as exc:
        raise InputFormatError(f"building {path}: an id or a (language, title) appears twice ({exc})") from None
    batch_e.clear()
    batch_n.clear()


def insert_pairs(
    conn: sqlite3.Connection,
    entries: list[tuple[int, str | None]],
    names: list[tuple[str, str, int]],
    path: str | os.PathLike[str],
) -> None:
    """Write streamed ``(id, special)`` entries and ``(lang, title, id)`` names, then clear the batches."""
    conn.executemany(
        "INSERT INTO entries(id, special) VALUES (?, ?) "
        "ON CONFLICT(id) DO UPDATE SET special = coalesce(excluded.special, special)",
        entries,
    )
    try:
        conn.executemany("INSERT INTO names(lang, title, id) VALUES (?, ?, ?)", names)
    except sqlite3.IntegrityError:
        raise InputFormatError(f"building {path}: a (language, title) appears twice") from None
    entries.clear()
    names.clear()


def attach_keys(conn: sqlite3.Connection, db: EntityDB) -> None:
    """Give each id the entity key its first resolvable title has in ``db``."""
    keys: list[tuple[str, int]] = []
    done: set[int] = set()
    for id_, lang, title in conn.execute("SELECT id, lang, title FROM names ORDER BY id, lang, title").fetchall():
        if id_ in done or lang not in db.languages:
            continue
        key = db.resolve_title(lang, title)
        if key is not None:
            keys.append((key, id_))
            done.add(id_)
    conn.executemany("UPDATE entries SET key = ? WHERE id = ?", keys)


def create_indexes(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> None:
    try:
        for statement in filter(str.strip, INDEXES.split(";")):
            conn.execute(statement)
    except sqlite3.IntegrityError:
        raise InputFormatError(f"building {path}: a special entity has more than one id") from None
