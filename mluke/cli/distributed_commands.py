"""``mluke distributed link`` / ``spans``: thin wrappers over :mod:`mluke.distributed` (a Ray cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kb.files import check_output
from mluke.cli import checks
from mluke.cli.output import print_table
from mluke.cli.params import (
    CandidatesOption,
    DbOption,
    DeviceOption,
    DtypeOption,
    LinkMethodOption,
    ModelOption,
    NilThresholdOption,
    PriorWeightOption,
    ProgressOption,
)
from mluke.options import SHARD_LINES

app = typer.Typer(
    help="Link a dataset bigger than one machine on a Ray cluster (pip install 'mluke[ray]'); docs/guides/"
    "distributed.md. Output: Parquet parts, one row per mention; a stopped job resumes when run again.",
    no_args_is_help=True,
)

SourceArgument = Annotated[
    str,
    typer.Argument(
        help='A JSONL file (one {"id", "text", "lang"} object per line), .jsonl.gz, Parquet (columns text, id, '
        "lang), or a folder of them; a path every worker reads (shared file system, or s3://... pyarrow reads)."
    ),
]
OutArgument = Annotated[
    Path,
    typer.Argument(help="Output folder (new, empty, or this job's earlier output, which is resumed)."),
]
WorkersOption = Annotated[int, typer.Option(help="Ray workers (actors), each holding one copy of the model.")]
ThreadsOption = Annotated[int, typer.Option(help="torch threads per worker.")]
CpusOption = Annotated[float, typer.Option(help="CPUs each worker asks Ray for.")]
GpusOption = Annotated[float, typer.Option(help="GPUs each worker asks Ray for (1 with --device cuda).")]
AddressOption = Annotated[
    str | None,
    typer.Option(
        help="The Ray cluster: 'auto' (this node's, after 'ray start'), ray://HOST:10001, or none: $RAY_ADDRESS, "
        "else a local cluster of --workers CPUs."
    ),
]
RestartOption = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace another job's output in OUT (the same job's output is always resumed)."),
]


@app.command("link", short_help="Link a dataset into Parquet, one row per mention (as mluke link --jsonl).")
def link(
    source: SourceArgument,
    out: OutArgument,
    lang: Annotated[str, typer.Option("--lang", "-l", help="Language of the documents that name none.")] = "en",
    model: ModelOption = None,
    db: DbOption = None,
    method: LinkMethodOption = "combined",
    prior_weight: PriorWeightOption = 1.0,
    nil_threshold: NilThresholdOption = None,
    candidates: CandidatesOption = False,
    shard_lines: Annotated[
        int,
        typer.Option(
            help="Lines per shard: one task, one Parquet part, what a dead worker's retry redoes (about 20 minutes "
            "of a CPU worker at the mluke-base size; more for GPU workers)."
        ),
    ] = SHARD_LINES,
    workers: WorkersOption = 2,
    threads: ThreadsOption = 1,
    cpus_per_worker: CpusOption = 1,
    gpus_per_worker: GpusOption = 0,
    address: AddressOption = None,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    progress: ProgressOption = True,
    overwrite: RestartOption = False,
) -> None:
    """Link every document of a dataset into Parquet (one row per mention, the fields of mluke link --jsonl), e.g.
    mluke distributed link corpus/ linked/ --workers 8 --address auto"""
    from mluke.options import LinkOptions

    checks.choice("--method", method, checks.LINK_METHODS)
    checks.between("--nil-threshold", nil_threshold, 0, 1)
    checks.device(device, dtype)
    options = LinkOptions(
        method=method,  # type: ignore[arg-type]  # checked above
        prior_weight=prior_weight,
        nil_threshold=nil_threshold,
        candidates=candidates,
        shard_lines=shard_lines,
    )
    from mluke.distributed.jobs import link_dataset

    run = _interruptible(
        link_dataset,
        source,
        out,
        lang,
        model=model,
        db=db,
        options=options,
        **_placement(workers, threads, cpus_per_worker, gpus_per_worker, address, device, dtype, progress),
    )
    _report(run, f"linked {source}")


@app.command("spans", short_help="Vectors of the mentions a linking job found, for a FAISS index.")
def spans(
    source: SourceArgument,
    links: Annotated[Path, typer.Argument(help="The output folder of 'mluke distributed link' over SOURCE.")],
    out: OutArgument,
    model: ModelOption = None,
    features: Annotated[
        str, typer.Option(help="'word' (mean of the span's word vectors), 'entity' or 'entity-token'.")
    ] = "word",
    layer: Annotated[int, typer.Option(help="Layer to read (0: embeddings; negative: from the last).")] = -1,
    all_mentions: Annotated[
        bool, typer.Option("--all-mentions", help="Vectors of NIL mentions too (default: linked ones only).")
    ] = False,
    index: Annotated[
        Path | None, typer.Option(help="Also write a FAISS index of the vectors (exact inner product) here.")
    ] = None,
    workers: WorkersOption = 2,
    threads: ThreadsOption = 1,
    cpus_per_worker: CpusOption = 1,
    gpus_per_worker: GpusOption = 0,
    address: AddressOption = None,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    progress: ProgressOption = True,
    overwrite: RestartOption = False,
) -> None:
    """Vectors of the mentions 'mluke distributed link' found (normalised; for a FAISS index), e.g.
    mluke distributed spans corpus/ linked/ vectors/ --index spans.faiss"""
    from mluke.spans import FEATURES

    checks.choice("--features", features, list(FEATURES))
    checks.device(device, dtype)
    if index is not None:  # refused before the job, not after it
        check_output(index, overwrite=overwrite)
    from mluke.distributed.jobs import span_vectors_dataset
    from mluke.distributed.reading import span_index
    from mluke.distributed.work import SpanSettings

    run = _interruptible(
        span_vectors_dataset,
        source,
        links,
        out,
        model=model,
        settings=SpanSettings(features=features, layer=layer, linked_only=not all_mentions),
        **_placement(workers, threads, cpus_per_worker, gpus_per_worker, address, device, dtype, progress),
    )
    _report(run, f"span vectors of {links}")
    if index is not None:
        span_index(out, path=index, overwrite=True)  # checked above
        typer.echo(f"wrote {index}")


def _placement(
    workers: int, threads: int, cpus: float, gpus: float, address: str | None, device: Any, dtype: Any, progress: bool
) -> dict[str, Any]:
    checks.at_least("--workers", workers, 1)
    checks.at_least("--threads", threads, 1)
    return {
        "workers": workers,
        "threads": threads,
        "cpus_per_worker": cpus,
        "gpus_per_worker": gpus,
        "address": address,
        "device": device,
        "dtype": dtype,
        "progress": progress,
    }


def _interruptible(job: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return job(*args, **kwargs)
    except KeyboardInterrupt as stop:
        if stop.args:
            typer.echo(str(stop.args[0]), err=True)
        raise typer.Exit(130) from None


def _report(run: Any, title: str) -> None:
    counts = {
        "shards": run.shards,
        "kept from before": run.resumed,
        "documents": run.documents,
        "mentions": run.mentions,
        "linked": run.linked,
        "bad lines": run.malformed,
        "docs/s": round(run.docs_per_second, 1),
    }
    print_table(title, list(counts), [list(counts.values())])
    for example in run.malformed_examples:
        typer.echo(f"skipped: {example}", err=True)
    typer.echo(f"wrote {run.dest}")
