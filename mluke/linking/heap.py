"""Returning freed memory to the operating system (glibc's ``malloc_trim``), for long linking streams."""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim  # glibc
    except (OSError, AttributeError):  # another C library: nothing to do
        return None


def trim_heap() -> None:
    """Return the memory the allocator holds freed to the system (glibc only; elsewhere nothing).

    A long text's segments allocate and free tensors and lists of many sizes; glibc keeps
    the freed memory, fragmented, and the resident size crept from 0.7 to 0.9 GB over a
    10 MB line with the live objects flat (``benchmarks/link_memory.py``). Every few
    segments this keeps it at the working set of one segment.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
