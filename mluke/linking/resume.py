"""Resuming an interrupted :func:`mluke.linking.corpus.link_corpus`: the partial output ``OUT.partial`` and its
sidecar ``OUT.partial.json``, which names the input and the settings that change the output, so that only the
same run goes on (see :mod:`mluke.linking.corpus`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from kb.errors import OutputExistsError, flag
from kb.files import check_output, remove
from mluke.linking.documents import iter_chunks, iter_documents
from mluke.linking.linker import Linker
from mluke.options import LinkOptions

#: Format of the sidecar ``OUT.partial.json``; a sidecar of another format is not resumed.
PROGRESS_FORMAT = "mluke-link-progress"
PROGRESS_VERSION = 1

#: Bytes of the input hashed into its identity (with its path, size and modification time).
HEAD_BYTES = 1 << 20


def sidecar_path(dest: Path) -> Path:
    """Where the sidecar of ``dest``'s partial output is."""
    return dest.with_name(dest.name + ".partial.json")


def partial_path(dest: Path) -> Path:
    """Where ``dest`` is written until it is complete."""
    return dest.with_name(dest.name + ".partial")


def identity(
    source: str | os.PathLike[str],
    lang: str,
    input_format: str,
    options: LinkOptions,
    model: Any,
    db: Any,
    linker: Linker | None,
) -> dict[str, Any]:
    """What the sidecar records: the input's identity and the settings that change the output."""
    path = Path(source).resolve()
    stat = path.stat()
    with path.open("rb") as f:
        head = hashlib.sha256(f.read(HEAD_BYTES)).hexdigest()
    if linker is not None:
        model, db = linker.bundle, linker.db
    return {
        "format": PROGRESS_FORMAT,
        "format_version": PROGRESS_VERSION,
        "input": {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "head_sha256": head},
        "input_format": input_format,
        "lang": lang,
        "options": dataclasses.asdict(options),
        "model": source_name(model),
        "db": source_name(db),
    }


def source_name(thing: Any) -> Any:
    """A model or kb as a run's record names it: a path with its size and modification time, a name, or a type."""
    if thing is None:
        return "default"
    path = getattr(thing, "path", thing)
    if isinstance(path, (str, os.PathLike)):
        p = Path(path)
        if p.exists():
            stat = p.stat()
            return {"path": str(p.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        return str(path)
    return type(thing).__name__


def resume(
    dest: Path,
    sidecar: dict[str, Any],
    overwrite: bool,
    source: str | os.PathLike[str],
    lang: str,
    input_format: str,
    options: LinkOptions,
) -> tuple[Path, int]:
    """The partial file to append to and the documents it keeps: an interrupted run's, cut back to the start of
    the chunk its last complete line belongs to, when the sidecar matches; else a new one."""
    check_output(dest, overwrite=overwrite)
    partial, meta = partial_path(dest), sidecar_path(dest)
    found: Any = None
    if meta.exists():
        try:
            found = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found = None
    if found == sidecar and partial.exists():
        lines = _complete_lines(partial)
        start = 0
        for chunk in iter_chunks(iter_documents(source, lang, input_format=input_format), options):  # type: ignore[arg-type]
            if chunk.start + len(chunk.documents) > lines:
                break
            start = chunk.start + len(chunk.documents)
        _truncate_lines(partial, start)
        return partial, start
    if (partial.exists() or meta.exists()) and not overwrite:
        why = "another input or other settings" if found is not None else "an unknown input"
        raise OutputExistsError(
            f"{partial} holds the progress of an interrupted run with {why} (see {meta}); run with the same input "
            "and settings to resume it, or pass {overwrite} to start again",
            options={"overwrite": flag("overwrite")},
        )
    remove(partial)
    meta.write_text(json.dumps(sidecar, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    partial.touch()
    return partial, 0


def _complete_lines(path: Path) -> int:
    """The lines of ``path`` that end in a newline (a torn last one does not count)."""
    count = 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            count += block.count(b"\n")
    return count


def _truncate_lines(path: Path, keep: int) -> None:
    """Cut ``path`` after its first ``keep`` lines."""
    offset = 0
    with path.open("rb") as f:
        for _ in range(keep):
            offset += len(f.readline())
    os.truncate(path, offset)
