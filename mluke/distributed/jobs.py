"""Jobs on a Ray cluster: :func:`link_dataset` and :func:`span_vectors_dataset`.

A job's driver (the process that calls these) lists the dataset's files, has the cluster index them
(:func:`mluke.distributed.shards.line_starts`, one task per file), writes the output folder's manifest
(:mod:`mluke.distributed.parts`), and hands the shards to ``workers`` Ray actors. Each actor loads the model and
opens the kb once, when it starts, then links shard after shard, writing each shard's part itself; the driver
only receives counts. An actor whose process dies (killed, out of memory, its node lost) is restarted by Ray,
which runs its unfinished shards again: a part is replaced whole, so the output has each shard's rows once.
A shard that kills its worker four times in a row fails the job, naming the shard.

The cluster: ``address=None`` joins the one this process is already connected to, or the one ``RAY_ADDRESS``
names, else starts a local one with ``workers * cpus_per_worker`` CPUs (what the tests and one-machine runs
use); ``"auto"`` joins the cluster of this node (``ray start --head`` / a job submitted with ``ray job submit``).
The model and kb must be at paths every worker reads (a shared file system), or the model a hub name each
worker can download.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from kb.errors import MlukeError, OptionError
from kb.files import check_writable
from mluke.distributed.parts import MANIFEST, SUCCESS, file_identity, part_path, prepare, write_json
from mluke.distributed.shards import DataFile, Shard, dataset_files, line_starts, plan_shards
from mluke.distributed.work import ShardDone, SpanSettings, link_shard, vectors_shard
from mluke.linking.resume import source_name
from mluke.options import LinkOptions, merge_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mluke.models.devices import Device, DType
    from mluke.options import LinkKeywords

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


class LinkWorker:
    """A Ray actor's state for a linking job: the linker, built once when the actor starts."""

    def __init__(
        self, model: str, db: str | None, options: LinkOptions, languages: list[str] | None, threads: int, place: Any
    ):
        from mluke.linking.knowbert import open_linker
        from mluke.linking.workers import set_threads

        set_threads(threads)
        device, dtype = place
        self.options = options
        self.linker = open_linker(model, db, options, languages=languages, device=device, dtype=dtype)

    def run(self, shard: Shard, lang: str, dest: str) -> ShardDone:
        return link_shard(self.linker, self.options, shard, lang, dest)


class SpanWorker:
    """A Ray actor's state for a span-vector job: the model, loaded once when the actor starts."""

    def __init__(self, model: str, settings: SpanSettings, threads: int, place: Any):
        from mluke.linking.workers import set_threads
        from mluke.opening import open_model

        set_threads(threads)
        device, dtype = place
        self.settings = settings
        self.model = open_model(model, device=device, dtype=dtype)

    def run(self, shard: Shard, lang: str, dest: str, links: str) -> ShardDone:
        import pyarrow.parquet as pq

        mentions = pq.read_table(part_path(links, shard.number))
        return vectors_shard(self.model, self.settings, shard, lang, mentions, dest)


def link_dataset(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    lang: str = "en",
    *,
    model: str | os.PathLike[str] | None = None,
    db: str | os.PathLike[str] | None = None,
    languages: list[str] | None = None,
    workers: int = 2,
    threads: int = 1,
    cpus_per_worker: float = 1,
    gpus_per_worker: float = 0,
    address: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    options: LinkOptions | None = None,
    on_shard: Callable[[ShardDone], None] | None = None,
    **keywords: Unpack[LinkKeywords],
) -> JobRun:
    """Link every document of a dataset on a Ray cluster into Parquet parts, one row per mention.

    The rows are those of ``mluke link FILE --jsonl`` for each file, mention by mention (same spans, entities
    and scores, bit for bit; columns: :data:`mluke.distributed.work.MENTION_SCHEMA`), whatever the number of
    workers; read them with :func:`read_mentions` or any Parquet reader. Resumable (:mod:`mluke.distributed.parts`).

    Args:
        source: a dataset file or folder (:mod:`mluke.distributed.shards`), at a path every worker reads.
        dest: the output folder (new, empty, or this job's earlier output), on a path every worker writes.
        lang: the language of the documents that do not name theirs.
        model: an mLUKE checkpoint folder or hub name (or a KnowBert folder with ``method="knowbert"``);
            ``None``: the demo model (trained here first if it is not cached, then read from here).
        db: a kb file every worker reads (opened read-only); ``None``: the embedded kb, built here if needed.
        languages: the languages whose names are looked for (each worker's mention index); default: all of the
            kb's.
        workers: Ray actors that link, each holding one copy of the model.
        threads: torch threads per worker.
        cpus_per_worker, gpus_per_worker: what each actor asks Ray for (a GPU worker: ``gpus_per_worker=1``
            and ``device="cuda"``).
        address: the Ray cluster (see the module docs).
        overwrite: replace another job's output in ``dest``.
        progress: a progress bar of shards.
        device, dtype: where and in which precision each worker runs the model.
        options: how to link (:class:`mluke.LinkOptions`; ``shard_lines`` sets the shard size), or its fields
            as keywords.
        on_shard: called on the driver with each finished shard's :class:`ShardDone`.

    Raises:
        InputFormatError: a missing dataset, a file of another kind, an unreadable or truncated file.
        OutputExistsError: ``dest`` holds something else (see :func:`mluke.distributed.parts.prepare`).
        OutputError: ``dest`` cannot be written (checked before any work).
        MlukeError: a shard that failed (naming it), Ray missing.
    """
    options = merge_options(LinkOptions, options, keywords, "link_dataset")
    _check_counts(workers, threads, cpus_per_worker, gpus_per_worker)
    files = dataset_files(source)
    check_writable(Path(dest) / MANIFEST)  # before any work: an unwritable folder is one clear error
    model, db = _model_path(model, options.method), _kb_path(db, options.method)
    setting = {
        "job": "link",
        "lang": lang,
        "options": dataclasses.asdict(options),
        "model": source_name(model),
        "db": source_name(db),
        "languages": languages,
        "place": [str(device), str(dtype)],
    }
    with _cluster(address, workers * cpus_per_worker) as ray:
        shards, inputs = _plan(ray, files, options.shard_lines)
        done = prepare(dest, {**setting, "inputs": inputs, "shards": len(shards)}, overwrite=overwrite)
        actor = _actor(ray, LinkWorker, cpus_per_worker, gpus_per_worker)
        pool = [actor.remote(model, db, options, languages, threads, (device, dtype)) for _ in range(workers)]
        return _run(ray, pool, shards, done, (lang, str(Path(dest).resolve())), dest, progress, on_shard)


def span_vectors_dataset(
    source: str | os.PathLike[str],
    links: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    model: str | os.PathLike[str] | None = None,
    settings: SpanSettings | None = None,
    workers: int = 2,
    threads: int = 1,
    cpus_per_worker: float = 1,
    gpus_per_worker: float = 0,
    address: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    on_shard: Callable[[ShardDone], None] | None = None,
) -> JobRun:
    """The span vectors of the mentions a :func:`link_dataset` job found in ``source``, on a Ray cluster.

    Each shard's vectors are one :func:`mluke.spans.span_vectors` call over the shard's documents and their
    mentions (those with an entity, or all with ``settings.linked_only=False``; ``"entity"`` features give each
    span its linked entity), written as a Parquet part (:func:`mluke.distributed.work.span_schema`). Build a FAISS
    index from them with :func:`span_index`.

    Raises:
        MlukeError: ``links`` is not a finished linking job's output over the same files.
    """
    settings = settings or SpanSettings()
    _check_counts(workers, threads, cpus_per_worker, gpus_per_worker)
    files = dataset_files(source)
    check_writable(Path(dest) / MANIFEST)
    linking = _finished_job(links)
    model = _model_path(model, "combined")
    setting = {"job": "spans", "links": str(Path(links).resolve()), "lang": linking["lang"]}
    setting.update(settings=dataclasses.asdict(settings), model=source_name(model), place=[str(device), str(dtype)])
    with _cluster(address, workers * cpus_per_worker) as ray:
        shards, inputs = _plan(ray, files, linking["options"]["shard_lines"])
        if inputs != linking["inputs"]:
            raise MlukeError(f"{links}: was linked from other files than {source} (or they changed since)")
        done = prepare(dest, {**setting, "inputs": inputs, "shards": len(shards)}, overwrite=overwrite)
        actor = _actor(ray, SpanWorker, cpus_per_worker, gpus_per_worker)
        pool = [actor.remote(model, settings, threads, (device, dtype)) for _ in range(workers)]
        call = (linking["lang"], str(Path(dest).resolve()), str(Path(links).resolve()))
        return _run(ray, pool, shards, done, call, dest, progress, on_shard)


def _check_counts(workers: int, threads: int, cpus: float, gpus: float) -> None:
    if workers < 1 or threads < 1 or cpus <= 0 or gpus < 0:
        raise OptionError(
            f"workers and threads must be at least 1, cpus_per_worker above 0 and gpus_per_worker at least 0; got "
            f"workers={workers}, threads={threads}, cpus_per_worker={cpus}, gpus_per_worker={gpus}"
        )


def _model_path(model: str | os.PathLike[str] | None, method: str) -> str:
    """A model every worker can load: the demo model's cached folder for ``None`` (trained here if absent)."""
    from mluke.opening import is_demo

    if model is None or is_demo(model):
        if method == "knowbert":
            raise OptionError("method 'knowbert' needs a KnowBert model folder (model=...)")
        from mluke.demo.model import demo_model

        return str(demo_model())
    return _absolute(model)


def _kb_path(db: str | os.PathLike[str] | None, method: str) -> str | None:
    """A kb every worker can open: the embedded kb's cached file for ``None`` (built here if absent); a KnowBert
    linker's ``None`` stays (it reads its own tables)."""
    if method == "knowbert" and db is None:
        return None
    if db is None or (str(db) == "embedded" and not Path(db).exists()):
        from kb.sources.embedded import default_db

        return str(default_db().path)
    return _absolute(db)


def _absolute(path: str | os.PathLike[str]) -> str:
    """A local path made absolute (workers may start in another folder); a hub name or URI as it is."""
    return str(Path(path).resolve()) if Path(path).exists() else str(path)


def _finished_job(links: str | os.PathLike[str]) -> dict[str, Any]:
    folder = Path(links)
    if not (folder / MANIFEST).exists() or not (folder / SUCCESS).exists():
        raise MlukeError(f"{folder}: not a finished linking job's output (run link_dataset / mluke distributed link)")
    manifest: dict[str, Any] = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("job") != "link":
        raise MlukeError(f"{folder}: the output of a {manifest.get('job')!r} job, not of a linking job")
    return manifest


@contextmanager
def _cluster(address: str | None, cpus: float) -> Iterator[Any]:
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


def _plan(ray: Any, files: list[DataFile], shard_lines: int) -> tuple[list[Shard], list[dict[str, Any]]]:
    """The shards of ``files`` and their identities, each file indexed by a task on the cluster."""

    def index(file: DataFile) -> tuple[list[tuple[int, int]], dict[str, Any]]:
        return line_starts(file, shard_lines), file_identity(file)

    task = ray.remote(num_cpus=0.5)(index)
    found = ray.get([task.remote(f) for f in files])
    return plan_shards(files, [starts for starts, _ in found]), [identity for _, identity in found]


def _actor(ray: Any, cls: type, cpus: float, gpus: float) -> Any:
    return ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=-1, max_task_retries=SHARD_RETRIES)(cls)


def _run(
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
    todo = [s for s in shards if s.number not in done]
    started = time.perf_counter()
    flight: dict[Any, tuple[int, Shard]] = {}
    bar = tqdm(total=len(shards), initial=len(done), desc="shards", unit="shard", disable=not progress)
    try:
        with bar:
            while todo or flight:
                busy = [k for k, _ in flight.values()]
                for k in range(len(pool)):
                    while todo and busy.count(k) < 2:
                        shard = todo.pop(0)
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
        _stop(ray, pool, flight)
        kept = len(list(Path(dest).glob("part-*.parquet")))
        raise KeyboardInterrupt(
            f"stopped: the {kept} of {len(shards)} shards written to {dest} are kept; run the same job again to "
            "finish it"
        ) from None
    finally:
        _stop(ray, pool, flight)
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
