"""SQLite plumbing shared by the entity database and the entity vocabulary.

Every mluke SQLite file has a ``meta`` table with at least ``format`` (what the
file is), ``format_version`` and ``complete`` ("1" once a build finished).
Builds write to ``<name>.partial-<pid>`` and are renamed into place only when
complete, so an interrupted build never leaves a file that looks finished.

Journal modes and concurrent use:

- a build writes its temporary file with no journal at all (``journal_mode =
  OFF``): nobody else sees that file, and a killed build leaves only a temporary
  file, which is never read;
- a finished file is published in the default rollback-journal mode, which
  SQLite can read from a folder the reader cannot write (a shared, read-only
  copy of a knowledge base), where a WAL-mode file could not be opened;
- a file changed in place (:func:`open_for_update`: ``mluke kb add`` and
  ``add-templates``) is switched to WAL mode, persistently. In rollback mode a
  writer waits until no reader is reading and then blocks new readers until it
  has committed, so one long read (streaming all titles, say) can make other
  readers fail with "database is locked". In WAL mode readers never wait for
  the writer nor the writer for readers: each read sees the last committed
  state. Such a file has ``-wal`` and ``-shm`` files next to it while in use,
  and needs a writable folder to be read (copy it elsewhere, or convert it back
  with ``PRAGMA journal_mode = DELETE``, to read it from a read-only one);
- every connection waits up to :data:`BUSY_TIMEOUT` seconds for a lock (the
  switch to WAL waits for the readers of the moment; one writer waits for
  another) instead of failing at once.

One method call of a reader reads one consistent state: the look-ups that need
several queries run them in one statement (see :meth:`kb.EntityDB.entity`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from kb.errors import InputFormatError, SchemaVersionError
from kb.files import check_output, discard, publish, temporary_name

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject, JsonValue

_SQLITE_MAGIC = b"SQLite format 3\x00"
T = TypeVar("T")
#: Seconds a connection waits for a lock held by another one before failing with "database is locked".
BUSY_TIMEOUT = 60.0


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


def open_readonly(
    path: str | os.PathLike[str], *, fmt: str, version: int, what: str
) -> tuple[sqlite3.Connection, dict[str, str]]:
    """Open an mluke SQLite file read-only and check its format and version.

    Opening is instant: nothing is loaded into Python. Many processes may read
    one file at once. Returns the connection and the ``meta`` table as a dict.
    """
    path = Path(path)
    _check_is_sqlite(path, what)
    conn = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False, timeout=BUSY_TIMEOUT
    )
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.DatabaseError as exc:
        conn.close()
        if _is_wal(path) and not os.access(path.parent, os.W_OK):
            raise InputFormatError(
                f"{path}: was changed in place (e.g. by `mluke kb add`), which puts it in WAL mode, and SQLite "
                f"cannot read a WAL-mode file from a folder it cannot write ({path.parent}); copy it to a "
                "writable folder, or convert it where it was written: sqlite3 FILE 'PRAGMA journal_mode = DELETE'"
            ) from None
        raise InputFormatError(f"{path}: an SQLite file but not {what} ({exc})") from None
    meta = dict(rows)
    if meta.get("format") != fmt:
        conn.close()
        raise InputFormatError(f"{path}: holds {meta.get('format', 'something else')!r}, expected {what} ({fmt!r})")
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


def _is_wal(path: Path) -> bool:
    """Whether the file's header says WAL mode (file format versions 2)."""
    with path.open("rb") as f:
        head = f.read(20)
    return head[18:20] == b"\x02\x02"


def open_for_update(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A connection (autocommit; begin transactions explicitly) that changes a finished file in place,
    after switching it to WAL mode (see the module docs)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _tune_for_bulk_writes(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB
    conn.execute("PRAGMA temp_store = MEMORY")


@contextlib.contextmanager
def atomic_build(
    path: str | os.PathLike[str],
    *,
    fmt: str,
    version: int,
    schema: str,
    overwrite: bool = False,
    provenance: Mapping[str, JsonValue] | None = None,
) -> Iterator[sqlite3.Connection]:
    """Create a new mluke SQLite file at ``path`` atomically.

    Yields a connection to ``<path>.partial-<pid>`` with ``schema`` applied. On a clean
    exit the ``meta`` rows are written, the transaction committed and the file
    renamed to ``path``; on an exception the partial file is deleted. An
    existing ``path`` is never replaced unless ``overwrite`` is true, not even one
    that another process wrote while this one was building (:func:`kb.files.publish`).
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
        if overwrite:  # a journal or WAL left by a killed writer of the file replaced is not the new file's
            for suffix in ("-journal", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        publish(tmp, path, overwrite=overwrite)
    except BaseException:
        conn.close()
        discard(tmp)  # never hides the error being raised
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


def chunked(items: list[T], size: int = 500) -> Iterator[list[T]]:
    """Split a list into pieces of at most ``size`` (e.g. for SQL ``IN (...)`` under SQLite's parameter limit)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


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

    def __enter__(self) -> Any:  # not Self: callers read JSON fields of the subclasses unnarrowed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (str(self.path),))

    @property
    def provenance(self) -> JsonObject:
        """How the file was built (builder, inputs, parameters)."""
        return cast("dict[str, Any]", json.loads(self.meta.get("provenance", "{}")))
