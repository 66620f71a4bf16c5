"""The output folder of a distributed job: one Parquet part per shard, a manifest, and a mark of completion.

``OUT/_mluke_job.json`` (the manifest) is written before any work: what the job reads (each file's path, size,
modification time and a hash of its first MiB), the settings that change its output, and its shards. Each shard's
rows are written to a temporary name and renamed to ``OUT/part-NNNNNN.parquet`` when complete, so a part is
whole or absent, and a shard run twice (an engine retrying a worker that died) replaces its part with the same
rows: never a duplicate. ``OUT/_SUCCESS`` (JSON: counts, seconds, malformed lines) is written last.

Running the job again on the same folder: with the same manifest it resumes (the parts present are kept, the
missing ones made); with another (other input, settings or model) it refuses, naming what differs, unless told
to overwrite, which removes the old parts first. A folder that is not a job's output is never written into.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kb.errors import MlukeError, OutputExistsError
from mluke.distributed.shards import DataFile, open_binary

MANIFEST = "_mluke_job.json"
SUCCESS = "_SUCCESS"
JOB_FORMAT = "mluke-distributed-job"
JOB_VERSION = 1
_HEAD_BYTES = 1 << 20


def part_path(dest: str | os.PathLike[str], number: int) -> Path:
    """Where shard ``number``'s rows are written."""
    return Path(dest) / f"part-{number:06d}.parquet"


def file_identity(file: DataFile) -> dict[str, Any]:
    """What names an input file in the manifest: path, size, and a hash of its first MiB."""
    with open_binary(file.path) as f:
        head = hashlib.sha256(f.read(_HEAD_BYTES)).hexdigest()
    return {"path": file.path, "name": file.name, "size": file.size, "head_sha256": head}


def prepare(dest: str | os.PathLike[str], manifest: Mapping[str, Any], *, overwrite: bool) -> set[int]:
    """Make ``dest`` ready for the job ``manifest`` describes; the shard numbers whose parts are already there.

    Raises:
        OutputExistsError: ``dest`` holds something that is not this job's output (another job's, or files that
            are no job's), and ``overwrite`` is not set.
    """
    out = Path(dest)
    manifest = {"format": JOB_FORMAT, "format_version": JOB_VERSION, **manifest}
    found = out / MANIFEST
    if found.exists():
        old = json.loads(found.read_text(encoding="utf-8"))
        if old == manifest:
            _clean_temporaries(out)
            (out / SUCCESS).unlink(missing_ok=True)
            return {int(p.name[5:11]) for p in out.glob("part-*.parquet")}
        if not overwrite:
            differs = ", ".join(k for k in sorted(set(old) | set(manifest)) if old.get(k) != manifest.get(k))
            raise OutputExistsError(
                f"{out}: holds the output of another job (differs in: {differs}); give another folder, or "
                "overwrite=True / --overwrite to replace it"
            )
        for p in out.glob("part-*.parquet"):
            p.unlink()
        _clean_temporaries(out)
        (out / SUCCESS).unlink(missing_ok=True)
    elif out.exists() and (not out.is_dir() or (any(out.iterdir()) and not overwrite)):
        raise OutputExistsError(
            f"{out}: exists and is not the output folder of an mluke job; give a new or empty folder"
            + ("" if not out.is_dir() else ", or overwrite=True / --overwrite to write into it anyway")
        )
    out.mkdir(parents=True, exist_ok=True)
    write_json(found, manifest)
    return set()


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """``data`` written to ``path`` through a temporary name, so the file is whole or absent."""
    temporary = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def write_part(table: pa.Table, dest: str | os.PathLike[str], number: int) -> None:
    """Shard ``number``'s rows, written whole to its part (replacing one a retried shard wrote before)."""
    final = part_path(dest, number)
    if not final.parent.is_dir():
        raise MlukeError(f"{final.parent}: the job's output folder is gone (is it on a path every worker sees?)")
    temporary = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex}")
    try:
        pq.write_table(table, temporary, compression="zstd")
        os.replace(temporary, final)
    finally:
        temporary.unlink(missing_ok=True)


def read_parts(dest: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """All rows of a finished job's output, in shard order (as the input's files and lines are ordered).

    Raises:
        MlukeError: ``dest`` is not a finished job's output (no ``_SUCCESS``: still running, stopped, or failed).
    """
    out = Path(dest)
    if not (out / SUCCESS).exists():
        raise MlukeError(f"{out}: not a finished job's output (no {SUCCESS}); run the job (again) to finish it")
    parts = sorted(out.glob("part-*.parquet"))
    return pa.concat_tables([pq.read_table(p, columns=columns) for p in parts]) if parts else pa.table({})


def _clean_temporaries(out: Path) -> None:
    for p in out.glob(".part-*.tmp-*"):
        p.unlink(missing_ok=True)
