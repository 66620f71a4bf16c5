"""The work folder of a dump build: what lets an interrupted build continue.

A build of ``kb.sqlite`` works in ``kb.sqlite.build/`` next to it. Every stage
(the Wikidata dump, each language's Wikipedia dump, in two passes) writes into
its own staging SQLite file there and commits after each chunk of input,
together with a progress row saying how far it got (chunk number, offset in the
decompressed input, line number, counters). Re-running the same build finds the
folder, checks that inputs and options are the same, skips finished stages and
continues unfinished ones from their last commit. Because chunks are processed
and committed in input order, the result is the same as an uninterrupted run.
The folder is deleted once the database is complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.errors import KbFormatError

_STATE_SCHEMA = """
CREATE TABLE IF NOT EXISTS state(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS progress(
    stage TEXT PRIMARY KEY, chunks INTEGER NOT NULL, offset INTEGER NOT NULL, line INTEGER NOT NULL,
    counts TEXT NOT NULL DEFAULT '{}', done INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
"""


def file_identity(path: Path) -> dict[str, Any]:
    """What identifies an input file across runs: its resolved path, size and modification time."""
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def connect_staging(path: Path, schema: str = "") -> sqlite3.Connection:
    """Open (creating) a staging SQLite file tuned for appending, in autocommit mode."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -131072")
    conn.execute("PRAGMA temp_store = FILE")
    conn.executescript(_STATE_SCHEMA + schema)
    return conn


@dataclass
class Position:
    """Where a stage stands in its input: offset (bytes) and line."""

    offset: int
    line: int


class Stage:
    """Progress of one resumable stage, stored in its staging database."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn = conn
        self.name = name
        row = conn.execute("SELECT chunks, offset, line, counts, done FROM progress WHERE stage = ?", (name,)).fetchone()
        if row is None:
            self.chunks, self.offset, self.line, self.counts, self.done = 0, 0, 1, {}, False
        else:
            self.chunks, self.offset, self.line = row[0], row[1], row[2]
            self.counts, self.done = json.loads(row[3]), bool(row[4])
        self.resumed = self.chunks > 0 or self.done

    def add_counts(self, counts: dict[str, int]) -> None:
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v

    def save(self, *, chunks: int, offset: int, line: int, done: bool = False) -> None:
        """Record progress; call inside the transaction that wrote the chunk's rows."""
        self.chunks, self.offset, self.line, self.done = chunks, offset, line, done
        self.conn.execute(
            "INSERT OR REPLACE INTO progress(stage, chunks, offset, line, counts, done) VALUES (?, ?, ?, ?, ?, ?)",
            (self.name, chunks, offset, line, json.dumps(self.counts, sort_keys=True), int(done)),
        )

    @contextlib.contextmanager
    def chunk(self, *, offset: int = 0, line: int = 0, counts: dict[str, int]) -> Iterator[Position]:
        """One transaction for a chunk's rows and the progress after it (rolled back on error).

        Yields the position to record, which the block may still change."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            pos = Position(offset, line)
            yield pos
            self.add_counts(counts)
            self.save(chunks=self.chunks + 1, offset=pos.offset, line=pos.line)
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def finish(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.save(chunks=self.chunks, offset=self.offset, line=self.line, done=True)
        self.conn.execute("COMMIT")


def append_rows(conn: sqlite3.Connection, rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """Append rows to staging tables: ``{table: [row, ...]}``."""
    for table, values in rows.items():
        if values:
            marks = ",".join("?" * len(values[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", values)


class WorkDir:
    """``<output>.build/``: staging files of one build, bound to its inputs and options."""

    def __init__(self, output: Path, params: dict[str, Any], *, restart: bool = False) -> None:
        self.path = output.with_name(output.name + ".build")
        self.params = params
        stamp = self.path / "params.json"
        text = json.dumps(params, sort_keys=True, ensure_ascii=False, indent=1)
        if self.path.exists() and restart:
            shutil.rmtree(self.path)
        if self.path.exists():
            if not stamp.exists() or stamp.read_text(encoding="utf-8") != text:
                raise KbFormatError(
                    f"{self.path}: holds an interrupted build with other inputs or options; "
                    "re-run with the same ones to continue it, or pass restart=True (CLI: --restart) to start over"
                )
            self.resumed = True
        else:
            self.path.mkdir()
            tmp = stamp.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, stamp)
            self.resumed = False

    def file(self, name: str) -> Path:
        return self.path / name

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
