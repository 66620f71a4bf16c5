"""What :func:`mluke.link` and :func:`mluke.probe` build (a :class:`mluke.Linker`, a loaded model), kept for
their next call: a loop of small calls pays for loading once, not per call.

This is module-level state, which the library otherwise avoids; it is acceptable here because it is

- bounded: at most :data:`MAX_BUILT` entries, least recently used first out (a model can be large);
- keyed on content identity: the resolved model folder and its weight files' size and modification time
  (an object passed in: that object), the kb file's path, size and modification time (and its write-ahead
  log's; an open kb passed in: that object too), the device, the dtype and every option that changes what
  is built, so a retrained model or a rebuilt kb is never served stale;
- clearable: :func:`clear_cache` (``mluke.clear_cache()``) empties it, e.g. to free memory;
- thread-safe: one lock guards the table, and a key being built is built once while other keys are served.

Code that wants explicit lifetimes builds a :class:`mluke.Linker` itself and keeps it; that is never cached.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

#: Built objects kept at most (linkers and probing models together).
MAX_BUILT = 4

T = TypeVar("T")


class BuiltCache:
    """A thread-safe least-recently-used table of built objects (see the module docs)."""

    def __init__(self, maxsize: int = MAX_BUILT) -> None:
        self.maxsize = maxsize
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._building: dict[Hashable, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list[Any]:
        """The kept objects, least recently used first."""
        with self._lock:
            return list(self._items.values())

    def _hit(self, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
            return False, None

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The object kept under ``key``, else ``build()`` kept under it (the oldest entry out past ``maxsize``)."""
        found, value = self._hit(key)
        if found:
            return cast("T", value)
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one build per key; other keys are served meanwhile
            found, value = self._hit(key)
            if found:
                return cast("T", value)
            try:
                made = build()
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self._items[key] = made
                while len(self._items) > self.maxsize:
                    self._items.popitem(last=False)
            return made

    def clear(self) -> None:
        """Forget every kept object."""
        with self._lock:
            self._items.clear()


#: The table :func:`mluke.link` and :func:`mluke.probe` keep what they build in.
BUILT = BuiltCache()


def clear_cache() -> None:
    """Forget the linkers and models that :func:`mluke.link` and :func:`mluke.probe` keep for their next call
    (in memory; the files of ``mluke cache`` stay), e.g. to free their memory."""
    BUILT.clear()


def file_identity(path: str | os.PathLike[str]) -> tuple[object, ...]:
    """A file's resolved path, size and modification time (and those of its SQLite write-ahead log, if any):
    what changes when the file is rebuilt or written."""
    p = Path(path).resolve()
    out: list[object] = [str(p)]
    for f in (p, p.with_name(p.name + "-wal")):
        try:
            st = f.stat()
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)


def model_identity(model: Any) -> tuple[object, ...]:
    """What a ``model=`` argument means, as a key: ``None`` (the demo model) and folders by their files' identity
    (:func:`file_identity` of the config and weights), hub names by name, objects by the object."""
    if model is None:
        from mluke.demo.model import demo_model

        model = demo_model(progress=False)
    if isinstance(model, (str, os.PathLike)):
        folder = Path(model)
        if folder.is_dir():
            files = sorted(f for f in folder.iterdir() if f.suffix in (".json", ".safetensors", ".bin", ".sqlite"))
            return ("folder", str(folder.resolve()), tuple(file_identity(f) for f in files))
        return ("name", os.fspath(model))
    if isinstance(model, tuple):
        return ("object", *(id(part) for part in model))
    return ("object", id(getattr(model, "model", model)))


def db_identity(db: Any) -> tuple[object, ...]:
    """What a ``db=`` argument means, as a key: the embedded kb (``None``) and paths by :func:`file_identity`, an
    open kb by the object and its file (a linker keeps the object it was given, which its owner may close)."""
    if db is None:
        from kb.sources.embedded import embedded_path

        return file_identity(embedded_path())
    if isinstance(db, (str, os.PathLike)):
        return file_identity(db)
    path = getattr(db, "path", None)
    return ("object", id(db), file_identity(path) if isinstance(path, (str, os.PathLike)) else None)


def dbs_identity(kbs: Mapping[str, Any] | None) -> tuple[object, ...] | None:
    """:func:`db_identity` of each kb of a ``kbs=`` mapping, by name."""
    return None if kbs is None else tuple((name, db_identity(db)) for name, db in sorted(kbs.items()))
