"""What mluke keeps in its cache folder (``$MLUKE_HOME``), and removing what is no longer used.

The cache holds the embedded knowledge base, the mention indexes built for the
databases linked against (``mentions-*.sqlite``, one per database file and
options), the entity vocabularies imported from checkpoints' ``entity_vocab.json``
(``entity-vocab/``; a full mLUKE vocabulary is about 1.2M entities), the demo
models and their work folders (an interrupted training resumes from there),
lock files, and what killed writes left under temporary names.
:func:`cache_entries` says what each entry is and whether it is still used;
:func:`clean_cache` removes the unused ones, never a work folder another
process is training in, nor a file mluke did not write.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kb.cache import cache_dir, mention_index_orphaned
from kb.files import remove
from kb.sources.embedded import embedded_path
from mluke.demo.model import DEMO_VERSION
from mluke.models.entity_vocab import VOCAB_FOLDER

#: status of an entry that :func:`clean_cache` removes by default
UNUSED = ("orphaned", "old version", "leftover")


@dataclass(frozen=True)
class CacheEntry:
    """One file or folder of the cache: ``kind`` (what it is), ``status`` ('in use', 'resumable',
    'training', 'orphaned', 'old version', 'leftover', 'lock', or 'left alone' for what mluke did not
    write, which is never removed) and ``why`` (the reason, for the unused)."""

    path: Path
    kind: str
    status: str
    size: int
    why: str = ""


def cache_entries(folder: str | os.PathLike[str] | None = None) -> list[CacheEntry]:
    """Every entry of the cache folder (default: :func:`kb.cache.cache_dir`), sorted by name."""
    root = Path(folder) if folder is not None else cache_dir()
    return [_describe(p) for p in sorted(root.iterdir())] if root.is_dir() else []


def clean_cache(
    folder: str | os.PathLike[str] | None = None, *, everything: bool = False, dry_run: bool = False
) -> list[CacheEntry]:
    """Remove unused entries (orphaned mention indexes, old versions, leftovers of killed writes) and
    return them; ``everything=True`` also removes those in use and resumable work (rebuilt on next use).
    A work folder whose training is running, and lock files, are always kept."""
    removed = []
    for entry in cache_entries(folder):
        if entry.status in UNUSED or (everything and entry.status in ("in use", "resumable")):
            if dry_run:
                removed.append(entry)
            elif entry.path.name.endswith(".work"):
                from mluke.demo.model import try_demo_lock

                with try_demo_lock(entry.path.with_name(entry.path.name[: -len(".work")])) as held:
                    if held:  # else a training started meanwhile: its folder is kept
                        remove(entry.path)
                        removed.append(entry)
            else:
                remove(entry.path)
                removed.append(entry)
    return removed


def _size(path: Path) -> int:
    if path.is_dir() and not path.is_symlink():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    try:
        return path.stat().st_size
    except OSError:
        return 0


_TEMPORARY = re.compile(r"\.(partial|old)-(\d+)$")
_DEMO = re.compile(r"^(\w+)-model-v(\d+)(\.work|\.lock)?$")


def _describe(path: Path) -> CacheEntry:
    name = path.name
    size = _size(path)
    temporary = _TEMPORARY.search(name)
    if temporary:
        pid = int(temporary.group(2))
        if _alive(pid):
            return CacheEntry(path, "being written", "in use", size, f"process {pid} is writing it")
        return CacheEntry(path, "half-written file", "leftover", size, f"process {pid} was stopped while writing it")
    if name.startswith("embedded-kb-") and name.endswith(".sqlite"):
        if name == embedded_path().name:
            return CacheEntry(path, "embedded kb", "in use", size)
        return CacheEntry(path, "embedded kb", "old version", size, f"this version uses {embedded_path().name}")
    if name.startswith("mentions-") and name.endswith(".sqlite"):
        why = mention_index_orphaned(path)
        return CacheEntry(path, "mention index", "orphaned" if why else "in use", size, why)
    if name == VOCAB_FOLDER and path.is_dir() and not path.is_symlink():
        count = sum(1 for p in path.iterdir() if p.suffix == ".sqlite")
        return CacheEntry(
            path,
            f"entity vocabularies imported from checkpoints ({count})",
            "in use",
            size,
            "each is imported again from its checkpoint's entity_vocab.json when next loaded",
        )
    demo = _DEMO.match(name)
    if demo:
        preset, version, suffix = demo.group(1), int(demo.group(2)), demo.group(3)
        if suffix == ".lock":
            return CacheEntry(path, f"demo model lock ({preset})", "lock", size)
        old = version != DEMO_VERSION
        if suffix == ".work":
            if _locked(path.with_name(path.name[: -len(".work")] + ".lock")):
                return CacheEntry(path, f"demo training ({preset})", "training", size, "a process is training in it")
            if old:
                return CacheEntry(
                    path, f"demo training ({preset})", "old version", size, f"this version trains v{DEMO_VERSION}"
                )
            return CacheEntry(
                path, f"demo training ({preset})", "resumable", size, "an interrupted training resumes from it"
            )
        if old:
            return CacheEntry(path, f"demo model ({preset})", "old version", size, f"this version uses v{DEMO_VERSION}")
        if not (path / "demo.json").is_file():
            return CacheEntry(path, f"demo model ({preset})", "leftover", size, "no demo.json: not a finished model")
        return CacheEntry(path, f"demo model ({preset})", "in use", size)
    return CacheEntry(path, "other", "left alone", size, "not written by mluke; never removed")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _locked(lock_file: Path) -> bool:
    """True if a process holds the lock of ``lock_file`` (see :func:`mluke.demo.model.demo_lock`)."""
    from mluke.demo.model import try_demo_lock

    if not lock_file.exists():  # no process ever took it (and looking does not create it)
        return False
    with try_demo_lock(lock_file.with_name(lock_file.name[: -len(".lock")])) as held:
        return not held
