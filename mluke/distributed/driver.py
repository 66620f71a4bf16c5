"""The driver's side of a distributed job: the cluster it joins or starts, the shards' plan, the actors, and the
loop that hands shards out, keeps two in flight per actor, counts what comes back (:class:`JobRun`) and stops
the actors on Ctrl-C or an error before returning."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kb.errors import MlukeError
from mluke.distributed.parts import SUCCESS, file_identity, write_json
from mluke.distributed.shards import DataFile, Shard, line_starts, plan_shards
from mluke.distributed.work import ShardDone

#: Times Ray runs a shard again after the worker running it died.
SHARD_RETRIES = 3


@dataclass
class JobRun:
    """What a distributed job did: its output folder, shards (those kept from an earlier run: ``resumed``), the
    documents, mentions and linked mentions of the shards it ran, the lines it could not read, the worker
    processes that reported (a restarted worker is a new process) and the wall seconds."""

    dest: str
    shards: int = 0
    resumed: int = 0
    documents: int = 0
    mentions: int = 0
    linked: int = 0
    malformed: int = 0
    malformed_examples: list[str] = field(default_factory=list)
    workers: int = 0
    worker_pids: set[int] = field(default_factory=set)
    seconds: float = 0.0

    @property
    def docs_per_second(self) -> float:
        """Documents of this run per wall second."""
        return self.documents / self.seconds if self.seconds > 0 else 0.0

    def add(self, done: ShardDone) -> None:
        """Count one finished shard."""
        self.documents += done.documents
        self.mentions += done.mentions
        self.linked += done.linked
        self.malformed += done.malformed
        self.malformed_examples += done.malformed_examples[: max(0, 5 - len(self.malformed_examples))]
        self.worker_pids.add(done.pid)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what ``_SUCCESS`` holds)."""
        return {**dataclasses.asdict(self), "worker_pids": sorted(self.worker_pids)}


@contextmanager
def cluster(address: str | None, cpus: float) -> Iterator[Any]:
    """Ray, connected to the cluster ``address`` names (see the module docs); a local one started here is
    stopped at the end."""
    try:
        import ray
    except ImportError:
        raise MlukeError("mluke.distributed needs Ray: pip install 'mluke[ray]'") from None
    if ray.is_initialized():
        yield ray
        return
    if address is None and not os.environ.get("RAY_ADDRESS"):
        ray.init(num_cpus=max(1, round(cpus)), include_dashboard=False, logging_level=logging.ERROR)
    else:
        ray.init(address=address, logging_level=logging.ERROR)
    try:
        yield ray
    finally:
        ray.shutdown()


def plan(ray: Any, files: list[DataFile], shard_lines: int) -> tuple[list[Shard], list[dict[str, Any]]]:
    """The shards of ``files`` and their identities, each file indexed by a task on the cluster."""

    def index(file: DataFile) -> tuple[list[tuple[int, int]], dict[str, Any]]:
        return line_starts(file, shard_lines), file_identity(file)

    task = ray.remote(num_cpus=0.5)(index)
    found = ray.get([task.remote(f) for f in files])
    return plan_shards(files, [starts for starts, _ in found]), [identity for _, identity in found]


def actor_class(ray: Any, cls: type, cpus: float, gpus: float) -> Any:
    return ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=-1, max_task_retries=SHARD_RETRIES)(cls)


def run_shards(
    ray: Any,
    pool: list[Any],
    shards: list[Shard],
    done: set[int],
    call: tuple[str, ...],
    dest: str | os.PathLike[str],
    progress: bool,
    on_shard: Callable[[ShardDone], None] | None,
) -> JobRun:
    """Hand the shards not ``done`` to the actors of ``pool``, two in flight per actor; write ``_SUCCESS``."""
    run = JobRun(str(dest), shards=len(shards), resumed=len(done), workers=len(pool))
    todo = deque(s for s in shards if s.number not in done)
    started = time.perf_counter()
    flight: dict[Any, tuple[int, Shard]] = {}
    bar = tqdm(total=len(shards), initial=len(done), desc="shards", unit="shard", disable=not progress)
    interrupted = False
    try:
        with bar:
            while todo or flight:
                busy = [k for k, _ in flight.values()]
                for k in range(len(pool)):
                    while todo and busy.count(k) < 2:
                        shard = todo.popleft()
                        flight[pool[k].run.remote(shard, *call)] = (k, shard)
                        busy.append(k)
                ready, _ = ray.wait(list(flight), num_returns=1)
                for ref in ready:
                    _, shard = flight.pop(ref)
                    finished = _result(ray, ref, shard)
                    run.add(finished)
                    run.seconds = time.perf_counter() - started
                    bar.update(1)
                    bar.set_postfix(docs=run.documents, refresh=False)
                    if on_shard is not None:
                        on_shard(finished)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        _stop(ray, pool, flight)  # also on an error: no worker goes on writing parts after the job has returned
    if interrupted:
        kept = len(list(Path(dest).glob("part-*.parquet")))
        raise KeyboardInterrupt(
            f"stopped: the {kept} of {len(shards)} shards written to {dest} are kept; run the same job again to "
            "finish it"
        )
    run.seconds = time.perf_counter() - started
    write_json(Path(dest) / SUCCESS, run.to_dict())
    return run


def _stop(ray: Any, pool: list[Any], flight: dict[Any, tuple[int, Shard]]) -> None:
    """Kill the actors and wait until their shards in flight have ended, so that no part appears after the
    job has returned (``ray.kill`` only asks; the process may still be finishing a part)."""
    for actor in pool:
        ray.kill(actor, no_restart=True)
    if flight:
        ray.wait(list(flight), num_returns=len(flight), timeout=60)
        flight.clear()


def _result(ray: Any, ref: Any, shard: Shard) -> ShardDone:
    from ray.exceptions import RayActorError, RayTaskError

    where = f"shard {shard.number} ({shard.file.path}, lines {shard.first_line}-{shard.stop_line or 'end'})"
    try:
        done: ShardDone = ray.get(ref)
        return done
    except RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, Exception) else None
        if isinstance(cause, MlukeError):
            raise cause from None
        raise MlukeError(f"{where} failed: {cause or exc}") from cause
    except RayActorError as exc:
        raise MlukeError(f"{where}: its worker died {SHARD_RETRIES + 1} times running it ({exc})") from None
