"""Forked worker processes that share one loaded object (a :class:`mluke.Linker`: its model weights, kb and
mention index) and map tasks in order, with a bounded number in flight.

The object is built once in this process and the workers are forked from it, so its memory is shared
copy-on-write: a tensor's data lives in pages of its own that no reference count touches, so the workers never
copy the weights (measure with PSS, ``/proc/PID/smaps_rollup``: RSS counts a shared page in every process that
maps it). The kb files the object reads are SQLite files opened read-only, read with ``pread`` and never
written, and nothing is read from them here between building the object and forking, so the workers read them
through the connections they inherit.

Unlike :func:`kb.sources.parallel.ordered_map` (a ``multiprocessing.Pool``, whose tasks and functions are
pickled), the object reaches the workers by the fork itself, never pickled; only tasks and results are.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kb.errors import MlukeError, OptionError

if TYPE_CHECKING:
    from multiprocessing.context import ForkProcess
    from multiprocessing.queues import Queue

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

#: Seconds a worker waits for a task before checking that the process that forked it is still there (a parent
#: killed with ``kill -9`` leaves its workers without anyone to stop them).
POLL_SECONDS = 1.0


class WorkerError(MlukeError):
    """A worker process died (killed, out of memory) or a task failed in a way that cannot be sent back."""


def set_threads(threads: int) -> int:
    """Set torch's intra-op threads of this process; returns the number it had (to restore)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    return before


class WorkerPool(Generic[S, T, R]):
    """``workers`` processes forked from this one, each computing ``fn(state, task)`` with ``threads`` torch threads.

    Use :meth:`map` for results in task order; leaving the ``with`` block (or an exception, or Ctrl-C in this
    process) stops the workers. Needs the ``fork`` start method (Linux, macOS).
    """

    def __init__(self, fn: Callable[[S, T], R], state: S, workers: int, *, threads: int = 1) -> None:
        if workers < 1 or threads < 1:
            raise OptionError(f"workers and threads must be at least 1, got workers={workers}, threads={threads}")
        if "fork" not in multiprocessing.get_all_start_methods():
            raise OptionError("workers > 1 needs the 'fork' start method (Linux or macOS); use workers=1 here")
        context = multiprocessing.get_context("fork")
        self._tasks: Queue[tuple[int, T] | None] = context.Queue()
        self._results: Queue[tuple[int, bool, Any]] = context.Queue()
        parent = os.getpid()
        self.processes: list[ForkProcess] = [
            context.Process(  # the fork passes fn and state as they are: never pickled
                target=_serve,
                args=(fn, state, self._tasks, self._results, threads, parent),
                name=f"mluke-link-{k + 1}",
                daemon=True,
            )
            for k in range(workers)
        ]
        for p in self.processes:
            p.start()

    def __enter__(self) -> WorkerPool[S, T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, tasks: Iterable[T], ahead: int | None = None, window: int | None = None) -> Iterator[R]:
        """``fn(state, task)`` for each task, in order. At most ``ahead`` tasks (default: 2 per worker) are at the
        workers at once, and at most ``window`` (default: 8 times ``ahead``) are sent and not yet given back, so
        memory does not grow with the number of tasks; a worker done with a later task gets the next one while a
        slow earlier one is still being computed (results wait, in order, in the window).

        Raises:
            WorkerError: a worker died; the exception of a task that raised, as it was raised.
        """
        ahead = ahead or 2 * len(self.processes)
        window = max(window or 8 * ahead, ahead)
        done: dict[int, R] = {}
        sent = received = given = 0
        source = iter(tasks)
        exhausted = False
        while True:
            while not exhausted and sent - received < ahead and sent - given < window:
                task = next(source, _END)
                if task is _END:
                    exhausted = True
                    break
                self._tasks.put((sent, task))  # type: ignore[arg-type]  # not _END here
                sent += 1
            if given in done:
                yield done.pop(given)
                given += 1
                continue
            if given == sent and exhausted:
                return
            number, ok, value = self._next_result()
            received += 1
            if not ok:
                raise value
            done[number] = value

    def _next_result(self) -> tuple[int, bool, Any]:
        while True:
            try:
                return self._results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                for p in self.processes:
                    if not p.is_alive():
                        raise WorkerError(
                            f"worker process {p.name} (pid {p.pid}) died with exit code {p.exitcode} "
                            "(killed, or out of memory: fewer workers need less)"
                        ) from None

    def close(self) -> None:
        """Stop the workers (those still working are terminated) and wait for them."""
        for _ in self.processes:
            with contextlib.suppress(Exception):
                self._tasks.put(None)
        for p in self.processes:
            p.join(timeout=0.5)
            if p.is_alive():
                p.terminate()
                p.join()
        for q in (self._tasks, self._results):
            q.close()
            q.cancel_join_thread()  # items nobody will read must not keep this process waiting


_END = object()


def _serve(
    fn: Callable[[Any, Any], Any],
    state: Any,
    tasks: Queue[tuple[int, Any] | None],
    results: Queue[tuple[int, bool, Any]],
    threads: int,
    parent: int,
) -> None:
    """A worker's loop: tasks until the ``None`` that ends them, or until the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the parent decides
    set_threads(threads)
    while True:
        try:
            item = tasks.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if item is None:
            return
        number, task = item
        try:
            results.put((number, True, fn(state, task)))
        except Exception as exc:  # sent back to be raised in the parent, as it was raised here
            results.put((number, False, _sendable(exc)))


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a :class:`WorkerError` with its text."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return WorkerError(f"a worker failed: {type(exc).__name__}: {exc}")
    return exc
