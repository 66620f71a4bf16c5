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

Interruptions at any moment (``kill -9`` included) and concurrent builds:

- a build holds an exclusive lock (``lockf``) on the file ``lock`` in its work
  folder for as long as it runs, so a second build of the same output fails at
  once with a clear error instead of writing into the same staging files; the
  kernel drops the lock of a killed process, so a lock never outlives its build
  (no lock on systems without ``fcntl``);
- ``params.json`` is written (atomically) before any stage file, so a folder that
  holds nothing else than temporary files is one whose build was killed right
  after creating it, and is started afresh;
- it is removed by renaming it away first (``<name>.old-<pid>``), so it is never
  seen half deleted.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError, MlukeError, flag
from kb.files import atomic_text, remove, temporary_name

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock
    fcntl = None  # type: ignore[assignment]

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
        row = conn.execute(
            "SELECT chunks, offset, line, counts, done FROM progress WHERE stage = ?", (name,)
        ).fetchone()
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
    """``<output>.build/``: staging files of one build, bound to its inputs and options.

    ``params`` holds the build's options and, under ``"inputs"``, one identity
    per input (``"wikidata"``, ``"wikipedia:ja"``, ...). Each input's stage
    files are named by :meth:`stage_files`; those of the Wikipedia dumps depend
    on the Wikidata stage. Re-running a build with:

    - the same inputs and options continues it;
    - other inputs or options after a run that stopped on a corrupt input
      (:meth:`record_failure`) discards the stages of what changed, keeps the
      rest, and says so in :attr:`notes`: repairing a truncated download needs
      no flag;
    - other inputs or options otherwise is refused, naming what changed and
      what ``restart`` would discard.
    """

    def __init__(self, output: Path, params: dict[str, Any], *, restart: bool = False) -> None:
        self.path = self.folder(output)
        self.params = params
        self.notes: list[str] = []
        self._lock = _lock_folder(self.path, output)
        try:
            old = self._read_json("params.json")
            held = [p for p in self.path.iterdir() if p.name != _LOCK and ".partial-" not in p.name]
            self.resumed = not restart and bool(held)
            if not self.resumed:  # new, restarted, or killed before it wrote anything: start afresh
                for child in self.path.iterdir():
                    if child.name != _LOCK:
                        remove(child)
            elif old != json.loads(json.dumps(params)):
                self._reconcile(old, params)
            self._write_json("params.json", params)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def folder(output: Path) -> Path:
        """The work folder of a build of ``output``."""
        return output.with_name(output.name + ".build")

    def close(self) -> None:
        """Release the lock (the folder stays, for a later run to continue)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> WorkDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- files -------------------------------------------------------------------------
    def file(self, name: str) -> Path:
        return self.path / name

    def remove(self) -> None:
        """Delete the folder (renamed away first, so that it is never seen half deleted) and release the lock."""
        trash = temporary_name(self.path, "old")
        os.rename(self.path, trash)
        shutil.rmtree(trash, ignore_errors=True)
        self.close()

    def _read_json(self, name: str) -> Any:
        path = self.file(name)
        try:
            return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        except (OSError, ValueError):
            return None

    def _write_json(self, name: str, data: Any) -> None:
        with atomic_text(self.file(name), overwrite=True) as f:
            f.write(json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1))

    @staticmethod
    def stage_files(name: str) -> tuple[str, ...]:
        """The files and folders in the work folder that belong to input ``name``."""
        if name == "wikidata":
            return ("wikidata.sqlite", "wikidata.sqlite-wal", "wikidata.sqlite-shm")
        lang = name.removeprefix("wikipedia:")
        return (
            f"wiki-{lang}.sqlite",
            f"wiki-{lang}.sqlite-wal",
            f"wiki-{lang}.sqlite-shm",
            f"raw-{lang}.jsonl.gz",
            f"corpus/{lang}",
        )

    # -- failures and changed inputs --------------------------------------------------------
    def record_failure(self, name: str, message: str) -> None:
        """Remember that the stage of input ``name`` stopped on a corrupt or truncated input."""
        self._write_json("failed.json", {"input": name, "message": message})

    def _reconcile(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Handle a work folder left by a build of other inputs or options (see the class docs)."""
        old = old or {}
        options = sorted(k for k in set(old) | set(new) if k != "inputs" and old.get(k) != new.get(k))
        before, after = old.get("inputs", {}), new.get("inputs", {})
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        stale = set(before) | set(after) if options or "wikidata" in changed else set(changed)
        what = [f"option {k}" for k in options] + [_input_change(k, before.get(k), after.get(k)) for k in changed]
        failed = self._read_json("failed.json")
        if failed is None:
            work = self.describe() or ["nothing finished yet"]
            raise InputFormatError(
                f"{self.path}: holds an interrupted build of other inputs or options ({'; '.join(what)}); re-run "
                f"with the same ones to continue it, or pass {{restart}} to start over, which discards: "
                f"{'; '.join(work)}",
                options={"restart": flag("restart")},
            )
        for name in sorted(stale):
            for rel in self.stage_files(name):
                target = self.file(rel)
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
        self.file("failed.json").unlink(missing_ok=True)
        kept = [k for k in after if k not in stale and before.get(k) == after.get(k)]
        self.notes.append(
            f"the previous run stopped on a bad input ({failed.get('message', '?')}); since then: {'; '.join(what)}. "
            f"Starting over: {', '.join(_stage_name(k) for k in sorted(stale)) or 'nothing'}"
            + (f"; kept: {', '.join(_stage_name(k) for k in sorted(kept))}" if kept else "")
        )

    def describe(self) -> list[str]:
        """What the work folder holds, per stage: finished, or how far it got."""
        out = []
        for name in ["wikidata", *sorted(f"wikipedia:{p.name[5:-7]}" for p in self.path.glob("wiki-*.sqlite"))]:
            db = self.file(self.stage_files(name)[0])
            if not db.exists():
                continue
            try:
                conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
                try:
                    rows = {r[0]: (r[1], bool(r[2])) for r in conn.execute("SELECT stage, line, done FROM progress")}
                finally:
                    conn.close()
            except sqlite3.Error:
                rows = {}
            main = rows.get("wikidata" if name == "wikidata" else "read")
            counted = name == "wikidata" or any(done for stage, (_, done) in rows.items() if stage.startswith("count"))
            if main is None:
                state = "started"
            elif main[1] and counted:
                state = f"finished, {main[0] - 1:,} lines"
            else:
                state = f"{'read, counting' if main[1] else 'reading'}, at line {main[0]:,}"
            out.append(f"the {_stage_name(name)} stage ({state})")
        return out


_LOCK = "lock"


def _lock_folder(path: Path, output: Path) -> int | None:
    """Create the work folder ``path`` if needed and lock its lock file; returns the descriptor that holds
    the lock. A POSIX record lock: held by this process only (not by the worker processes it forks) and
    dropped by the kernel when it ends, however it ends.

    Raises if another build holds it. Tries again when the folder was meanwhile renamed away by a build
    that finished (see :meth:`WorkDir.remove`)."""
    while True:
        with contextlib.suppress(FileExistsError):
            path.mkdir()
        if fcntl is None:
            return None
        try:
            fd = os.open(path / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            raise MlukeError(
                f"{output}: another build of this database is running (it holds {path}); "
                "wait for it to finish, or stop it and run this build again to continue it"
            ) from None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path / _LOCK)):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _stage_name(name: str) -> str:
    return "Wikidata" if name == "wikidata" else f"{name.removeprefix('wikipedia:')}wiki"


def _input_change(name: str, before: Any, after: Any) -> str:
    what = "the Wikidata dump" if name == "wikidata" else f"the {_stage_name(name)} dump"
    if before is None:
        return f"{what} added"
    if after is None:
        return f"{what} left out"
    if before.get("path") != after.get("path"):
        return f"{what} is now {after.get('path')} (was {before.get('path')})"
    return f"{what} {after.get('path')} changed (size or time)"
