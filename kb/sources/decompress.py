"""Reading dump files as streams of decompressed bytes, in parallel where the machine allows.

The format is told by the file's first bytes (``BZh`` for bzip2, ``1f 8b`` for
gzip, anything else is read as is), never by its name. Decompression runs in
Debian's ``lbzip2`` (parallel bzip2) or ``pigz`` when they are on ``PATH``, as a
separate process feeding a pipe, so it overlaps with parsing; otherwise in
Python's own ``bz2``/``gzip`` (single-threaded: about 2.5x slower for bzip2 on 2
cores). Multi-stream files (``pages-articles-multistream``) work both ways.

A truncated or corrupt compressed file raises :class:`kb.InputFormatError` naming
the file, when the damage is reached.
"""

from __future__ import annotations

import bz2
import gzip
import os
import shutil
import subprocess
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from kb.errors import InputFormatError

Compression = Literal["bz2", "gzip", "none"]
#: External parallel decompressors, tried in this order.
EXTERNAL_TOOLS: dict[str, tuple[str, ...]] = {"bz2": ("lbzip2",), "gzip": ("pigz",)}


def detect_compression(path: str | os.PathLike[str]) -> Compression:
    """``"bz2"``, ``"gzip"`` or ``"none"``, from the file's magic bytes."""
    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file (expected a dump file)")
    with path.open("rb") as f:
        head = f.read(3)
    if head == b"BZh":
        return "bz2"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    return "none"


def external_tool(compression: Compression) -> str | None:
    """Path of the parallel decompressor for ``compression`` if one is installed."""
    for name in EXTERNAL_TOOLS.get(compression, ()):
        found = shutil.which(name)
        if found:
            return found
    return None


class DumpStream:
    """Decompressed bytes of one dump file: ``read(n)`` until ``b""``, then ``close()``.

    ``skip(n)`` jumps ``n`` decompressed bytes ahead (a seek for plain files; for
    compressed ones the bytes are decompressed and dropped), used to resume a build.
    """

    def __init__(self, path: str | os.PathLike[str], *, threads: int | None = None, external: bool = True) -> None:
        self.path = Path(path)
        self.compression = detect_compression(self.path)
        self.tool: str | None = external_tool(self.compression) if external else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._file: BinaryIO
        self.offset = 0  # decompressed bytes handed out (or skipped) so far
        if self.tool is not None:
            args = [self.tool, "-d", "-c"]
            if threads:
                args += ["-n" if "lbzip2" in Path(self.tool).name else "-p", str(max(1, threads))]
            self._proc = subprocess.Popen(
                [*args, str(self.path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1 << 20
            )
            self._file = self._proc.stdout  # type: ignore[assignment]
        elif self.compression == "bz2":
            self._file = bz2.open(self.path, "rb")  # type: ignore[assignment]
        elif self.compression == "gzip":
            self._file = gzip.open(self.path, "rb")  # type: ignore[assignment]
        else:
            self._file = self.path.open("rb")

    @property
    def how(self) -> str:
        """How the file is decompressed, for reports: ``lbzip2``, ``python bz2``, ``plain``..."""
        if self.tool:
            return Path(self.tool).name
        return "plain" if self.compression == "none" else f"python {self.compression}"

    def _damaged(self, detail: str) -> InputFormatError:
        return InputFormatError(
            f"{self.path}: the {self.compression} stream is truncated or corrupt after "
            f"{self.offset:,} decompressed bytes ({detail}); download the file again"
        )

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes; ``b""`` at the end (after checking the stream ended cleanly)."""
        try:
            data = self._file.read(n)
        except (EOFError, OSError, zlib.error) as exc:
            raise self._damaged(str(exc) or type(exc).__name__) from None
        if not data:
            self._check_exit()
        self.offset += len(data)
        return data

    def skip(self, n: int) -> None:
        """Move ``n`` decompressed bytes ahead."""
        if self.compression == "none" and self.tool is None:
            self._file.seek(self.offset + n)
            self.offset += n
            return
        left = n
        while left > 0:
            data = self.read(min(left, 1 << 22))
            if not data:
                raise InputFormatError(
                    f"{self.path}: shorter than when the interrupted build read it; "
                    "was it replaced? Remove the build folder to start over"
                )
            left -= len(data)

    def _check_exit(self) -> None:
        if self._proc is None:
            return
        code = self._proc.wait()
        if code != 0:
            err = self._proc.stderr.read().decode("utf-8", "replace").strip() if self._proc.stderr else ""
            raise self._damaged(err.splitlines()[-1] if err else f"{self.how} exited with status {code}")

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        self._file.close()
        if self._proc is not None:
            if self._proc.stderr:
                self._proc.stderr.close()
            self._proc.wait()

    def __enter__(self) -> DumpStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_blocks(stream: DumpStream, size: int, sep: bytes = b"\n") -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, block)``: pieces of at least ``size`` bytes that end just after the first ``sep``
    from there on (the last one may not), where ``offset`` is the block's start in the decompressed stream.

    Where a block ends depends only on where it starts (as in :func:`iter_ranges`), not on how the
    stream was read: a build that resumes at a block's start cuts the rest exactly as an
    uninterrupted one did, so it writes the same bytes."""
    buf = bytearray()
    start = stream.offset
    scan = size  # no block end in buf before this index
    while True:
        data = stream.read(size)
        buf += data
        while len(buf) > scan:
            cut = buf.find(sep, scan)
            if cut < 0:
                scan = max(size, len(buf) - len(sep) + 1)
                break
            cut += len(sep)
            yield start, bytes(buf[:cut])
            del buf[:cut]
            start += cut
            scan = size
        if not data:
            if buf:
                yield start, bytes(buf)
            return


@dataclass(frozen=True)
class FileRange:
    """Bytes ``[start, end)`` of a plain file: what a worker process reads for itself, so that
    a chunk of an uncompressed dump never passes through the main process."""

    path: str
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(self.start)
            data = f.read(self.end - self.start)
        if len(data) != self.end - self.start:
            raise InputFormatError(
                f"{self.path}: shorter than expected ({self.start + len(data):,} bytes, "
                f"expected at least {self.end:,}); was it replaced during the build?"
            )
        return data


def iter_ranges(
    path: str | os.PathLike[str], start: int, size: int, sep: bytes = b"\n"
) -> Iterator[tuple[int, FileRange]]:
    """:func:`iter_blocks` for a plain file, as ranges: pieces of about ``size`` bytes from
    ``start`` that end just after a ``sep`` (the last one may not). Only the bytes around each
    cut are read here."""
    path = str(path)
    total = os.path.getsize(path)
    with open(path, "rb") as f:
        while start < total:
            end = start + size
            if end >= total:
                end = total
            else:
                f.seek(end)
                while True:  # a line may be longer than one read
                    data = f.read(1 << 16)
                    cut = data.find(sep)
                    if cut >= 0:
                        end += cut + len(sep)
                        break
                    if not data:
                        break
                    end += len(data)
            yield start, FileRange(path, start, end)
            start = end
