"""The ``mluke`` command line: the outermost layer of the library.

Subcommands are thin wrappers: each parses its arguments, calls one documented
function of ``kb``, ``mluke`` or ``probes``, prints the result as a table (or
writes it with ``--json``/``--csv``/``--jsonl``) and turns a
:class:`kb.errors.MlukeError` into one line naming the command line's flags.
This sub-package is the only place that imports all three packages; nothing
outside it imports it, except ``python -m mluke``.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Annotated

import typer

from kb.errors import MlukeError
from mluke.cli import (
    analysis_commands,
    cache_commands,
    kb_commands,
    knowbert_commands,
    link_commands,
    probe_commands,
    train_commands,
    transfer_commands,
)

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


app.add_typer(kb_commands.app, name="kb", short_help="Build, inspect and query entity databases and vocabularies.")
app.add_typer(cache_commands.app, name="cache", short_help="Show and clean the cache folder ($MLUKE_HOME).")
app.command("pretrain", short_help="Pretrain mLUKE from XLM-R, or train the demo model.")(train_commands.pretrain)
app.command("probe", short_help="Ask the model which object each subject has (cloze probing).")(probe_commands.probe)
app.command("eval-mlama", short_help="Evaluate a model on mLAMA 1.1 (P@1, language bias).")(probe_commands.eval_mlama)
app.command("eval-demo", short_help="Probe and link with the demo model on its held-out facts.")(
    probe_commands.eval_demo
)
app.command("link", short_help="Link entity mentions in texts to the kb's entities.")(link_commands.link)
app.command("eval-link", short_help="Evaluate entity linking on Mewsli-9.")(link_commands.eval_link)
app.command("corpus", short_help="Build the pretraining corpus from a dump build's page texts.")(train_commands.corpus)
app.command("finetune", short_help="Fine-tune mLUKE for NER, relation extraction, entity typing or QA.")(
    transfer_commands.finetune
)
app.command("evaluate", short_help="Evaluate a fine-tuned model zero-shot in other languages.")(
    transfer_commands.evaluate
)
app.add_typer(
    knowbert_commands.app, name="knowbert", short_help="Train a KnowBert knowledge layer (entity linker inside)."
)
app.add_typer(analysis_commands.app, name="index", short_help="Build and search a FAISS index of span vectors.")
app.command("eval-cwr", short_help="Contextual word retrieval across languages (MRR).")(analysis_commands.eval_cwr)
app.command("modularity", short_help="Modularity of span features, communities = languages.")(
    analysis_commands.modularity
)
app.command("parallel-spans", short_help="Write parallel sentences with entity spans from kb facts.")(
    analysis_commands.parallel_spans
)


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
