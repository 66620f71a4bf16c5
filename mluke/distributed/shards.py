"""A dataset of documents cut into shards: the unit of work a cluster worker reads, links and writes alone.

A dataset is one file or a folder of files (searched recursively, in name order): JSONL (``.jsonl``, ``.json``,
``.ndjson``; one ``{"id", "text", "lang"}`` object a line, as ``mluke link`` reads them), gzip-compressed JSONL
(``.jsonl.gz``, ``.json.gz``: C4's layout) or Parquet (``.parquet``; columns ``text``, optional ``id`` and
``lang``; a row's ``line`` is its number in the file, from 1). Paths may be local, on a shared file system, or a
URI pyarrow's file systems read (``s3://``, ``gs://``, ``hdfs://``), as long as every worker can read them.

A shard is ``shard_lines`` lines of one file (:data:`mluke.options.SHARD_LINES`), from a multiple of it: the
same cut :func:`mluke.linking.documents.iter_chunks` never lets a chunk straddle, so linking the shards one by
one gives what linking the whole file does. An uncompressed JSONL file is indexed once (its newlines counted,
about a second per GB) to find the byte where each shard starts; a compressed file cannot be entered in the
middle, so its lines are counted once and each shard decompresses the file from its start, skipping the lines
before its own (seconds per file, next to hours of linking); a Parquet file's rows are counted from its footer,
without reading them.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast

from kb.errors import InputFormatError
from mluke.linking.documents import Document, parse_document

FileKind = Literal["jsonl", "jsonl.gz", "parquet"]

#: File names a dataset folder is searched for, and how each is read.
SUFFIXES: dict[str, FileKind] = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".jsonl.gz": "jsonl.gz",
    ".json.gz": "jsonl.gz",
    ".parquet": "parquet",
}
_BLOCK = 1 << 23  # bytes read at a time while counting newlines


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: its path or URI, its name in the output (``source``: relative to the dataset's
    folder), how it is read, and its size in bytes."""

    path: str
    name: str
    kind: FileKind
    size: int


@dataclass(frozen=True)
class Shard:
    """Lines ``first_line`` to ``stop_line - 1`` (``None``: to the end) of one file, the first of them at byte
    ``offset`` (JSONL) or row ``first_line - 1`` (Parquet); ``number`` names its output part."""

    number: int
    file: DataFile
    first_line: int
    offset: int
    stop_line: int | None


@dataclass
class Malformed:
    """Lines a shard could not read (JSONL lines that are not a document): how many, and the first messages."""

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, message: str, keep: int = 5) -> None:
        """Count one bad line; its message is kept among the first ``keep``."""
        self.count += 1
        if len(self.examples) < keep:
            self.examples.append(message)


def _kind(name: str) -> FileKind | None:
    lowered = name.lower()
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if lowered.endswith(suffix):
            return SUFFIXES[suffix]
    return None


def _filesystem(source: str) -> tuple[Any, str]:
    """pyarrow's file system for ``source`` and the path within it."""
    from pyarrow import fs

    if "://" in source:
        return fs.FileSystem.from_uri(source)
    return fs.LocalFileSystem(), str(Path(source).resolve())


def dataset_files(source: str | os.PathLike[str]) -> list[DataFile]:
    """The files of a dataset (a file, or a folder searched recursively in name order).

    Raises:
        InputFormatError: nothing at ``source``, a file of a kind this module does not read, or a folder with
            no such file (naming it and what was expected).
    """
    from pyarrow import fs

    expected = "JSONL (.jsonl, .json, .ndjson), gzip-compressed JSONL (.jsonl.gz, .json.gz) or Parquet (.parquet)"
    system, path = _filesystem(str(source))
    info = system.get_file_info(path)
    if info.type == fs.FileType.NotFound:
        raise InputFormatError(f"{source}: no such file or folder; expected a dataset of {expected} files")
    if info.type == fs.FileType.File:
        kind = _kind(info.path)
        if kind is None:
            raise InputFormatError(f"{source}: not a file this reads; expected {expected}")
        path = str(source) if "://" in str(source) else info.path  # absolute: workers may start elsewhere
        return [DataFile(path, Path(info.path).name, kind, info.size)]
    found = system.get_file_info(fs.FileSelector(path, recursive=True))
    files = []
    prefix = "" if "://" not in str(source) else str(source).split("://", 1)[0] + "://"
    for item in sorted(found, key=lambda i: i.path):
        kind = _kind(item.path)
        if item.type != fs.FileType.File or kind is None or Path(item.path).name.startswith((".", "_")):
            continue
        files.append(DataFile(prefix + item.path, os.path.relpath(item.path, path), kind, item.size))
    if not files:
        raise InputFormatError(f"{source}: a folder with no dataset file; expected {expected} files in it")
    return files


def open_binary(path: str) -> IO[bytes]:
    """``path`` (a local path or a URI) opened for reading bytes, with seeking."""
    system, inner = _filesystem(path)
    try:
        return cast("IO[bytes]", system.open_input_file(inner))
    except OSError as exc:
        raise InputFormatError(f"{path}: unreadable ({exc})") from None


def line_starts(file: DataFile, shard_lines: int) -> list[tuple[int, int]]:
    """``(line, offset)`` where each shard of ``file`` starts: line 1 at 0, then every ``shard_lines`` lines."""
    if file.kind == "jsonl.gz":
        try:
            with open_binary(file.path) as raw, gzip.GzipFile(fileobj=raw) as f:
                lines = sum(block.count(b"\n") for block in iter(lambda: f.read(_BLOCK), b""))
        except (EOFError, gzip.BadGzipFile, OSError) as exc:
            raise InputFormatError(f"{file.path}: unreadable or truncated ({exc})") from None
        return [(line, 0) for line in range(1, max(lines, 1) + 1, shard_lines)]
    if file.kind == "parquet":
        import pyarrow.parquet as pq

        with open_binary(file.path) as f:
            rows = pq.ParquetFile(f).metadata.num_rows
        return [(line, line - 1) for line in range(1, max(rows, 1) + 1, shard_lines)]
    starts = [(1, 0)]
    seen = base = 0  # newlines before the block, and the block's first byte
    with open_binary(file.path) as f:
        while block := f.read(_BLOCK):
            count = block.count(b"\n")
            target = len(starts) * shard_lines  # newlines before the next shard's first line
            at, passed = -1, 0  # the last newline found in the block, and how many were passed
            while seen + count >= target:
                for _ in range(target - seen - passed):
                    at = block.index(b"\n", at + 1)
                passed = target - seen
                if base + at + 1 < file.size:  # a file that ends on a shard's last line has no next shard
                    starts.append((target + 1, base + at + 1))
                target += shard_lines
            seen += count
            base += len(block)
    return starts


def plan_shards(files: list[DataFile], starts: list[list[tuple[int, int]]]) -> list[Shard]:
    """The shards of ``files`` given each file's :func:`line_starts`, numbered in order."""
    shards: list[Shard] = []
    for file, file_starts in zip(files, starts):
        for k, (line, offset) in enumerate(file_starts):
            stop = file_starts[k + 1][0] if k + 1 < len(file_starts) else None
            shards.append(Shard(len(shards), file, line, offset, stop))
    return shards


def read_shard(shard: Shard, lang: str, malformed: Malformed) -> Iterator[Document]:
    """The documents of ``shard``, as :func:`mluke.linking.documents.iter_documents` reads them from the whole
    file (same lines, texts, languages and ids); a JSONL line that is not a document is counted in
    ``malformed`` and skipped (a huge corpus is not stopped by one bad line).

    Raises:
        InputFormatError: an unreadable or truncated file (naming it), or a Parquet file without a ``text``
            column.
    """
    name = shard.file.path
    if shard.file.kind == "parquet":
        yield from _parquet_documents(shard, lang, malformed)
        return
    try:
        with open_binary(name) as raw:
            stream: Any = raw
            first = shard.first_line
            if shard.file.kind == "jsonl.gz":  # from the file's start: the lines before the shard's are skipped
                stream, first = gzip.GzipFile(fileobj=raw), 1
            else:
                raw.seek(shard.offset)
            for number, line in enumerate(io.BufferedReader(stream, 1 << 20), first):
                if shard.stop_line is not None and number >= shard.stop_line:
                    return
                if number >= shard.first_line and line.strip():
                    try:
                        yield parse_document(line, number, lang, name)
                    except InputFormatError as exc:
                        malformed.add(str(exc))
    except (EOFError, gzip.BadGzipFile, OSError) as exc:
        raise InputFormatError(f"{name}: unreadable or truncated ({exc})") from None


def _parquet_documents(shard: Shard, lang: str, malformed: Malformed) -> Iterator[Document]:
    import pyarrow.parquet as pq

    name = shard.file.path
    with open_binary(name) as f:
        table = pq.ParquetFile(f)
        columns = table.schema_arrow.names
        if "text" not in columns:
            raise InputFormatError(f"{name}: no 'text' column; expected columns text, and optionally id and lang")
        wanted = [c for c in ("text", "id", "lang") if c in columns]
        first = shard.first_line - 1
        stop = shard.stop_line - 1 if shard.stop_line is not None else table.metadata.num_rows
        row = 0
        for group in range(table.metadata.num_row_groups):
            size = table.metadata.row_group(group).num_rows
            if row + size > first and row < stop:
                data = table.read_row_group(group, columns=wanted).to_pylist()
                for k, item in enumerate(data):
                    number = row + k + 1
                    if not first < number <= stop:
                        continue
                    if isinstance(item.get("text"), str):
                        own = item.get("lang")
                        yield Document(number, item["text"], own or lang, "", item.get("id"))
                    else:
                        malformed.add(f"{name}, row {number}: no text (expected a string in the 'text' column)")
            row += size
