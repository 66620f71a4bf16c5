"""SQLite plumbing shared by the entity database and the entity vocabulary.

Every mluke SQLite file has a ``meta`` table with at least ``format`` (what the
file is), ``format_version`` and ``complete`` ("1" once a build finished).
Builds write to ``<name>.partial`` and are renamed into place only when
complete, so an interrupted build never leaves a file that looks finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from kb.errors import InputFormatError, SchemaVersionError
from kb.files import check_output, temporary_name

_SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_is_sqlite(path: Path, what: str) -> None:
    if not path.exists():
        raise InputFormatError(f"{path}: no such file (expected {what})")
    if path.is_dir():
        raise InputFormatError(f"{path}: is a directory (expected {what}, an SQLite file)")
    with path.open("rb") as f:
        head = f.read(16)
    if head != _SQLITE_MAGIC:
        hint = ""
        if head.lstrip()[:1] in (b"{", b"["):
            hint = " (it looks like JSON: import it first, see `mluke kb vocab --help`)"
        raise InputFormatError(f"{path}: not an SQLite file, so not {what}{hint}")


def open_readonly(path: str | os.PathLike[str], *, fmt: str, version: int, what: str) -> tuple[sqlite3.Connection, dict[str, str]]:
    """Open an mluke SQLite file read-only and check its format and version.

    Opening is instant: nothing is loaded into Python. Many processes may read
    one file at once. Returns the connection and the ``meta`` table as a dict.
    """
    path = Path(path)
    _check_is_sqlite(path, what)
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise InputFormatError(f"{path}: an SQLite file but not {what} ({exc})") from None
    meta = dict(rows)
    if meta.get("format") != fmt:
        conn.close()
        raise InputFormatError(
            f"{path}: holds {meta.get('format', 'something else')!r}, expected {what} ({fmt!r})"
        )
    found = int(meta.get("format_version", "-1"))
    if found != version:
        conn.close()
        raise SchemaVersionError(
            f"{path}: {what} of format version {found}, but this mluke reads version {version}; "
            "rebuild it with this version of mluke"
        )
    if meta.get("complete") != "1":
        conn.close()
        raise InputFormatError(f"{path}: the build that wrote this {what} did not finish; rebuild it")
    return conn, meta


def _tune_for_bulk_writes(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB
    conn.execute("PRAGMA temp_store = MEMORY")


@contextlib.contextmanager
def atomic_build(
    path: str | os.PathLike[str], *, fmt: str, version: int, schema: str,
    overwrite: bool = False, provenance: dict[str, Any] | None = None,
) -> Iterator[sqlite3.Connection]:
    """Create a new mluke SQLite file at ``path`` atomically.

    Yields a connection to ``<path>.partial`` with ``schema`` applied. On a clean
    exit the ``meta`` rows are written, the transaction committed and the file
    renamed to ``path``; on an exception the partial file is deleted. An
    existing ``path`` is never replaced unless ``overwrite`` is true.
    """
    path = check_output(path, overwrite=overwrite)
    tmp = temporary_name(path)  # one name per process: two builds of one file never share it
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        _tune_for_bulk_writes(conn)
        conn.executescript(schema)
        conn.execute("BEGIN")
        yield conn
        meta = {
            "format": fmt,
            "format_version": str(version),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "provenance": json.dumps(provenance or {}, ensure_ascii=False, sort_keys=True),
            "complete": "1",
        }
        conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", meta.items())
        conn.execute("COMMIT")
        conn.execute("PRAGMA analysis_limit = 1000")  # sampled statistics: enough for the planner, O(1) per index
        conn.execute("ANALYZE")
        conn.close()
        os.replace(tmp, path)
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise


def attach(conn: sqlite3.Connection, path: str | os.PathLike[str] | None, alias: str) -> None:
    """Attach (or, with ``path=None``, detach) a database inside a bulk build.

    SQLite refuses both inside a transaction, so the open one is committed first
    and a new one begun: safe in :func:`atomic_build`, whose file is a partial
    one until the build ends.
    """
    conn.execute("COMMIT")
    if path is None:
        conn.execute(f"DETACH DATABASE {alias}")
    else:
        conn.execute(f"ATTACH DATABASE ? AS {alias}", (str(path),))
    conn.execute("BEGIN")


def chunked(items: list[Any], size: int = 500) -> Iterator[list[Any]]:
    """Split a list into pieces of at most ``size`` (e.g. for SQL ``IN (...)`` under SQLite's parameter limit)."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


class SqliteStore:
    """Base of the read-only file classes: opens and checks the file, closes, pickles by path."""

    FORMAT: ClassVar[str]
    FORMAT_VERSION: ClassVar[int]
    WHAT: ClassVar[str]

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._conn, self.meta = open_readonly(self.path, fmt=self.FORMAT, version=self.FORMAT_VERSION, what=self.WHAT)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (str(self.path),))

    @property
    def provenance(self) -> dict[str, Any]:
        """How the file was built (builder, inputs, parameters)."""
        return json.loads(self.meta.get("provenance", "{}"))
