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
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import MlukeError, OptionError
from kb.files import check_writable
from mluke.distributed.driver import JobRun, actor_class, cluster, plan, run_shards
from mluke.distributed.parts import MANIFEST, SUCCESS, part_path, prepare
from mluke.distributed.shards import Shard, dataset_files
from mluke.distributed.work import ShardDone, SpanSettings, link_shard, vectors_shard
from mluke.linking.resume import source_name
from mluke.options import LinkOptions, merge_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mluke.models.devices import Device, DType
    from mluke.options import LinkKeywords


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
    with cluster(address, workers * cpus_per_worker) as ray:
        shards, inputs = plan(ray, files, options.shard_lines)
        done = prepare(dest, {**setting, "inputs": inputs, "shards": len(shards)}, overwrite=overwrite)
        actor = actor_class(ray, LinkWorker, cpus_per_worker, gpus_per_worker)
        pool = [actor.remote(model, db, options, languages, threads, (device, dtype)) for _ in range(workers)]
        return run_shards(ray, pool, shards, done, (lang, str(Path(dest).resolve())), dest, progress, on_shard)


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
    with cluster(address, workers * cpus_per_worker) as ray:
        shards, inputs = plan(ray, files, linking["options"]["shard_lines"])
        if inputs != linking["inputs"]:
            raise MlukeError(f"{links}: was linked from other files than {source} (or they changed since)")
        done = prepare(dest, {**setting, "inputs": inputs, "shards": len(shards)}, overwrite=overwrite)
        actor = actor_class(ray, SpanWorker, cpus_per_worker, gpus_per_worker)
        pool = [actor.remote(model, settings, threads, (device, dtype)) for _ in range(workers)]
        call = (linking["lang"], str(Path(dest).resolve()), str(Path(links).resolve()))
        return run_shards(ray, pool, shards, done, call, dest, progress, on_shard)


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
