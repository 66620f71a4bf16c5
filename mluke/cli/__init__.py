"""The ``mluke`` command line: the outermost layer of the library.

Subcommands are thin wrappers: each parses its arguments, calls one documented
function of ``kb``, ``mluke`` or ``probes``, prints the result as a table (or
writes it with ``--json``/``--csv``/``--jsonl``) and turns a
:class:`kb.errors.MlukeError` into one line naming the command line's flags.
This sub-package imports ``kb`` and ``mluke`` only: the commands that run
``probes`` live in :mod:`probes.cli` and are added through the entry points of
the group ``mluke.commands`` (:mod:`mluke.cli.registry`). Nothing else in
``mluke`` imports it, except ``python -m mluke``.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Annotated

import typer

from kb.errors import MlukeError
from mluke.cli import (
    cache_commands,
    distributed_commands,
    kb_commands,
    knowbert_commands,
    link_commands,
    probe_commands,
    serve_commands,
    train_commands,
)
from mluke.cli.registry import Command, discovered, ordered, register

app = typer.Typer(
    help="mluke: multilingual knowledge probing and entity linking with mLUKE.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: flags without a <bool> placeholder, help text not squeezed into boxes
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"mluke {version('mluke')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("mluke (not installed; run from a source checkout)")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """mluke: multilingual knowledge probing and entity linking with mLUKE."""


#: The command line's own commands, in the order of ``mluke --help``; those of other packages (entry points of
#: the group ``mluke.commands``) are listed among them, each after the one it names.
OWN_COMMANDS = [
    Command("kb", "Build, inspect and query entity databases and vocabularies.", kb_commands.app),
    Command("cache", "Show and clean the cache folder ($MLUKE_HOME).", cache_commands.app),
    Command("pretrain", "Pretrain mLUKE from XLM-R, or train the demo model.", train_commands.pretrain),
    Command("probe", "Ask the model which object each subject has (cloze probing).", probe_commands.probe),
    Command("link", "Link entity mentions in texts to the kb's entities.", link_commands.link),
    Command("serve", "Serve linking and probing over HTTP (JSON, NIF, a page).", serve_commands.serve),
    Command("distributed", "Link datasets bigger than one machine on a Ray cluster.", distributed_commands.app),
    Command("corpus", "Build the pretraining corpus from a dump build's page texts.", train_commands.corpus),
    Command("knowbert", "Train a KnowBert knowledge layer (entity linker inside).", knowbert_commands.app),
]
register(app, ordered(OWN_COMMANDS, discovered()))


def main() -> None:
    """Entry point: run the app; library errors print as one line, without a traceback, and name the
    command line's own flags (``--overwrite``, not ``overwrite=True``)."""
    try:
        app()
    except MlukeError as exc:
        typer.echo(f"error: {exc.for_cli()}", err=True)
        sys.exit(1)
    except OSError as exc:  # a file the library did not check first: one line naming it, not a traceback
        if exc.filename is None or exc.errno not in _FILE_ERRNOS:
            raise
        typer.echo(f"error: {os.fsdecode(exc.filename)}: {exc.strerror or exc}", err=True)
        sys.exit(1)


#: File errors that are the user's situation, not a bug: a read-only folder, no permission, a full disk, ...
_FILE_ERRNOS = frozenset(
    {
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.ENOTDIR,
        errno.EISDIR,
    }
)
