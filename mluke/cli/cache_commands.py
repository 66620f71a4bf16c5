"""``mluke cache info`` and ``mluke cache clean``: thin wrappers over :func:`mluke.cache.cache_entries` and
:func:`mluke.cache.clean_cache`."""

from __future__ import annotations

from typing import Annotated

import typer

from kb.cache import cache_dir
from mluke.cli.output import print_table

app = typer.Typer(
    help="Show what mluke keeps in its cache folder ($MLUKE_HOME) and remove what is no longer used.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} kB"


@app.command("info", short_help="List the cache's entries, their sizes and whether they are used.")
def info() -> None:
    """List the cache's entries (embedded kb, mention indexes, demo models, interrupted trainings) with their
    size and whether they are still used."""
    from mluke.cache import UNUSED, cache_entries

    entries = cache_entries()
    typer.echo(f"cache folder: {cache_dir()} (set MLUKE_HOME to move it)")
    print_table(
        None,
        ["name", "what", "size", "status"],
        [[e.path.name, e.kind, _size(e.size), e.status + (f" ({e.why})" if e.why else "")] for e in entries],
    )
    unused = [e for e in entries if e.status in UNUSED]
    total = sum(e.size for e in entries)
    typer.echo(
        f"{len(entries)} entries, {_size(total)}; {len(unused)} unused ({_size(sum(e.size for e in unused))}): "
        "`mluke cache clean` removes them"
    )


@app.command("clean", short_help="Remove unused cache entries (--all: everything not running).")
def clean(
    everything: Annotated[
        bool,
        typer.Option(
            "--all",
            help=(
                "Also remove what is in use (the embedded kb, the demo models, mention indexes, imported entity "
                "vocabularies, resumable "
                "trainings); each is rebuilt when next needed."
            ),
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be removed.")] = False,
) -> None:
    """Remove unused entries: mention indexes of databases that were deleted or rebuilt, older versions,
    what killed processes left half written. A training that is running is never touched."""
    from mluke.cache import clean_cache

    removed = clean_cache(everything=everything, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for e in removed:
        typer.echo(f"{verb} {e.path.name} ({e.kind}, {_size(e.size)}{'; ' + e.why if e.why else ''})")
    typer.echo(f"{verb} {len(removed)} entries, {_size(sum(e.size for e in removed))} from {cache_dir()}")
