"""Reading an SQLite write-ahead log (``<db>-wal``) as SQLite's recovery does, to tell where a kill landed.

Format (sqlite.org/fileformat2.html, "The Write-Ahead Log"): a 32-byte header (magic, version, page
size, checkpoint sequence, two salts, two checksums), then frames of a 24-byte header (page number,
database size in pages for a commit frame else 0, the two salts, two checksums) and one page. A frame
counts only while its salts equal the header's and the running checksum matches; recovery keeps the
frames up to the last valid commit frame and ignores the rest.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

MAGIC = (0x377F0682, 0x377F0683)  # checksums over little- / big-endian words


class WalState(NamedTuple):
    """``salt``: which generation of the log; ``frames``: valid frames; ``committed``: those up to the last
    commit frame (what readers see). ``frames > committed``: a transaction wrote pages and did not commit."""

    salt: tuple[int, int] | None
    frames: int
    committed: int


def _checksum(data: bytes, s0: int, s1: int, big_endian: bool) -> tuple[int, int]:
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def read_wal(path: Path) -> WalState:
    """The valid frames of the log at ``path`` (no file or no complete header: none)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return WalState(None, 0, 0)
    if len(data) < 32:
        return WalState(None, 0, 0)
    magic, _version, page_size, _seq, salt1, salt2, c0, c1 = struct.unpack(">8I", data[:32])
    if magic not in MAGIC:
        raise ValueError(f"{path}: not an SQLite write-ahead log (magic {magic:#x})")
    big = magic & 1 == 1
    if _checksum(data[:24], 0, 0, big) != (c0, c1):
        return WalState(None, 0, 0)
    s0, s1 = c0, c1
    frames = committed = 0
    offset = 32
    while offset + 24 + page_size <= len(data):
        _page, db_size, f1, f2, k0, k1 = struct.unpack(">6I", data[offset : offset + 24])
        if (f1, f2) != (salt1, salt2):
            break
        s0, s1 = _checksum(data[offset : offset + 8], s0, s1, big)
        s0, s1 = _checksum(data[offset + 24 : offset + 24 + page_size], s0, s1, big)
        if (s0, s1) != (k0, k1):
            break
        frames += 1
        if db_size:
            committed = frames
        offset += 24 + page_size
    return WalState((salt1, salt2), frames, committed)


def landed(before: WalState, after: WalState) -> str:
    """Where a writer killed between the two readings was: ``"before writing"`` (no frame of its own),
    ``"mid-commit"`` (frames of its own, no commit frame after them) or ``"after its commit"``."""
    same_log = after.salt == before.salt
    new_frames = after.frames - before.frames if same_log else after.frames
    if new_frames <= 0:
        return "before writing"
    if after.frames > after.committed:
        return "mid-commit"
    return "after its commit"
