"""An ordered, bounded parallel map over worker processes.

``multiprocessing.Pool.imap`` reads its whole input ahead, which for a 76 GiB
dump means reading the dump into memory; :func:`ordered_map` keeps at most
``ahead`` tasks in flight, so memory stays flat, and yields results in input
order, so a build is deterministic and can commit its progress after each one.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from multiprocessing.pool import AsyncResult

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """Worker processes to use by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _context() -> BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def ordered_map(
    fn: Callable[..., R], tasks: Iterable[tuple[Any, ...]], workers: int, ahead: int | None = None
) -> Iterator[R]:
    """``fn(*task)`` for each task, in order, computed by ``workers`` processes.

    With ``workers <= 1`` everything runs in this process. ``fn`` must be a
    module-level function and tasks picklable. Closing the iterator (or an
    exception) stops the workers.
    """
    if workers <= 1:
        for task in tasks:
            yield fn(*task)
        return
    ahead = ahead or 2 * workers
    pool = _context().Pool(workers)
    pending: deque[AsyncResult[R]] = deque()
    try:
        for task in tasks:
            pending.append(pool.apply_async(fn, task))
            if len(pending) >= ahead:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        pool.close()
    finally:
        pool.terminate()
        pool.join()
