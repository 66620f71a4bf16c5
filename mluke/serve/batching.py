"""Requests that arrive together go to the model as one call: the :class:`Batcher`.

Every piece of work that touches the model or the kb runs on one worker thread, in order (torch runs one
forward pass at a time anyway, and the kb's objects are then used from one thread only). Link requests with the
same key (language and options) that wait together are merged into one batch of at most ``batch_texts`` texts;
when the last batch held several requests, the first request to an idle service waits ``gather_ms`` for the
others of its round to join it (a lone client is never held back). While a batch runs, the next
requests queue up and form the next batch, so throughput grows with the number of concurrent clients. The queue
is bounded (:class:`Busy` when full) and a request that gives up (a timeout, a closed connection) is dropped
from the queue if it has not started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Runs one batch: the key, the texts, and per text its item (spans or ``None``) -> one result per text.
BatchFunction = Callable[[Hashable, list[str], list[Any]], Sequence[Any]]


class Busy(Exception):
    """The queue is full: the request was not taken (answer 503 with ``Retry-After``)."""


@dataclass
class _Job(Generic[T]):
    key: Hashable | None  #: None: a call that runs on its own
    texts: list[str]
    items: list[Any]
    future: asyncio.Future[T]
    call: Callable[[], T] | None = None
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = max(1, len(self.texts))


class Batcher:
    """Queues work for the one worker thread and merges link requests into batches.

    Args:
        run_batch: links a batch (``key, texts, items -> one result per text``).
        batch_texts: the most texts in one batch.
        queue_texts: the most texts waiting at once (a call counts as one).
        gather_ms: how long the first request of an idle service waits for others (after a batch of several).
        batching: ``False``: one request per model call.
    """

    def __init__(
        self, run_batch: BatchFunction, *, batch_texts: int, queue_texts: int, gather_ms: float, batching: bool = True
    ) -> None:
        self.run_batch = run_batch
        self.batch_texts = batch_texts
        self.queue_texts = queue_texts
        self.gather_s = gather_ms / 1000
        self.batching = batching
        self.executor: concurrent.futures.ThreadPoolExecutor | None = None  #: the worker thread, while started
        self.batches = 0  #: model calls made (link batches and single calls)
        self.batched_requests = 0  #: link requests answered through batches
        self._pending: list[_Job[Any]] = []
        self._queued = 0
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._busy = False
        self._last_size = 0  #: link requests in the last batch

    @property
    def queued(self) -> int:
        """Texts waiting for the model now (not those of the batch that runs)."""
        return self._queued

    def start(self) -> None:
        """Start the loop that forms batches in the running event loop (again, if it ran in another loop)."""
        running = asyncio.get_running_loop()
        if self._task is not None and (self._task.done() or self._task.get_loop() is not running):
            self._task = None  # a loop that ended (tests run each client in its own loop)
            self._pending, self._queued, self._busy = [], 0, False
        if self._task is None:
            if self.executor is None:
                self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mluke-model")
            self._wake = asyncio.Event()
            self._task = running.create_task(self._loop(), name="mluke-batcher")

    async def stop(self) -> None:
        """Finish what is queued and running, then stop the loop and the worker thread."""
        while self._pending or self._busy:
            await asyncio.sleep(0.01)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None

    async def link(self, key: Hashable, texts: list[str], items: list[Any]) -> list[Any]:
        """The results of ``texts`` (one per text), linked in a batch with others of the same ``key``.

        Raises:
            Busy: the queue is full.
        """
        loop = asyncio.get_running_loop()
        job: _Job[list[Any]] = _Job(key, texts, items, loop.create_future())
        return await self._enqueue(job)

    async def call(self, function: Callable[[], T]) -> T:
        """``function()`` on the worker thread, in turn with the batches (a probe, a kb look-up).

        Raises:
            Busy: the queue is full.
        """
        loop = asyncio.get_running_loop()
        job: _Job[T] = _Job(None, [], [], loop.create_future(), call=function)
        return await self._enqueue(job)

    async def _enqueue(self, job: _Job[T]) -> T:
        self.start()
        if self._queued + job.size > self.queue_texts:
            raise Busy(f"the queue is full ({self._queued} of {self.queue_texts} texts waiting)")
        self._pending.append(job)
        self._queued += job.size
        assert self._wake is not None  # set by start()
        self._wake.set()
        try:
            return await job.future
        except asyncio.CancelledError:
            if job in self._pending:  # given up before it ran: it leaves the queue
                self._pending.remove(job)
                self._queued -= job.size
            raise

    def _take(self) -> list[_Job[Any]]:
        """The next batch: the first job, and (batching) the later jobs of its key while they fit."""
        first = self._pending[0]
        taken = [first]
        if first.key is not None and self.batching:
            total = first.size
            for job in self._pending[1:]:
                if job.key == first.key and total + job.size <= self.batch_texts:
                    taken.append(job)
                    total += job.size
        for job in taken:
            self._pending.remove(job)
            self._queued -= job.size
        return taken

    async def _loop(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._pending:
                continue
            if self.batching and self.gather_s > 0 and self._pending[0].key is not None and self._last_size > 1:
                # requests came together last time: let the others of this round join (a lone client's
                # requests are not held back)
                await asyncio.sleep(self.gather_s)
            while self._pending:
                jobs = [j for j in self._take() if not j.future.done()]
                if not jobs:
                    continue
                self._busy = True
                try:
                    await self._run(loop, jobs)
                finally:
                    self._busy = False

    async def _run(self, loop: asyncio.AbstractEventLoop, jobs: list[_Job[Any]]) -> None:
        self.batches += 1
        first = jobs[0]
        try:
            if first.call is not None:
                result = await loop.run_in_executor(self.executor, first.call)
                _settle(first.future, result)
                return
            texts = [t for j in jobs for t in j.texts]
            items = [i for j in jobs for i in j.items]
            results = await loop.run_in_executor(self.executor, self.run_batch, first.key, texts, items)
        except Exception as exc:  # the batch failed: each of its requests gets the error
            for job in jobs:
                if not job.future.done():
                    job.future.set_exception(exc)
            return
        self.batched_requests += len(jobs)
        self._last_size = len(jobs)
        start = 0
        for job in jobs:
            _settle(job.future, list(results[start : start + len(job.texts)]))
            start += len(job.texts)


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():  # a request that gave up while its batch ran
        future.set_result(value)
