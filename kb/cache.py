"""Where mluke keeps files it builds on first use (embedded kb, mention indexes, demo model), and whether a
cached mention index still belongs to a database."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path


def cache_dir() -> Path:
    """``$MLUKE_HOME`` if set, else ``$XDG_CACHE_HOME/mluke``, else ``~/.cache/mluke`` (created)."""
    env = os.environ.get("MLUKE_HOME")
    if env:
        path = Path(env)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        path = Path(base) / "mluke"
    path.mkdir(parents=True, exist_ok=True)
    return path


def remove_orphaned_indexes(folder: Path | None = None) -> list[Path]:
    """Delete the cached mention indexes (``mentions-*.sqlite``) whose database is gone or was rebuilt, and
    return their paths. A process still reading one keeps its open file until it is done."""
    removed = []
    for path in sorted((folder or cache_dir()).glob("mentions-*.sqlite")):
        if mention_index_orphaned(path):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def mention_index_orphaned(index: Path) -> str:
    """Why the cached mention index ``index`` can no longer be used ('' if it can): the database it was built
    for is gone or was rebuilt (a rebuilt database gets a new index, named after its new size and time)."""
    provenance = _meta(index, "provenance")
    if provenance is None:
        return "unreadable"
    sources = list(_databases(provenance))
    for db_path, created in sources:
        if not Path(db_path).is_file():
            return f"its database {db_path} no longer exists"
        if created is not None and _meta(Path(db_path), "created") != created:
            return f"its database {db_path} was rebuilt since"
    return ""


def _databases(provenance: object) -> list[tuple[str, object]]:
    """(database path, its 'created' stamp) of every database named in an index's provenance."""
    found: list[tuple[str, object]] = []
    if isinstance(provenance, dict):
        if isinstance(provenance.get("database"), str):
            found.append((provenance["database"], provenance.get("database_created")))
        for value in provenance.values():
            if isinstance(value, (dict, list)):
                found.extend(_databases(value))
    elif isinstance(provenance, list):
        for value in provenance:
            found.extend(_databases(value))
    return found


def _meta(path: Path, key: str) -> object:
    """The ``meta`` value ``key`` of an mluke SQLite file (JSON-decoded when it is JSON), None if unreadable."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    try:
        return json.loads(row[0])
    except (TypeError, ValueError):
        return row[0]
