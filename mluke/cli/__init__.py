"""The ``mluke`` command line: the outermost layer of the library.

Subcommands are thin wrappers: each parses its arguments, calls one documented
function of ``kb``, ``mluke`` or ``probes``, prints the result as a table (or
writes it with ``--json``/``--csv``/``--jsonl``) and turns a
:class:`kb.errors.MlukeError` into one line naming the command line's flags.
This sub-package is the only place that imports all three packages; nothing
outside it imports it, except ``python -m mluke``.
"""

from __future__ import annotations

import sys

import typer

from kb.errors import MlukeError
from mluke.cli import analysis_commands, kb_commands, link_commands, probe_commands, train_commands, transfer_commands

app = typer.Typer(
    help="mluke: multilingual knowledge probing and entity linking with mLUKE.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(kb_commands.app, name="kb")
app.command("pretrain")(train_commands.pretrain)
app.command("probe")(probe_commands.probe)
app.command("eval-mlama")(probe_commands.eval_mlama)
app.command("eval-demo")(probe_commands.eval_demo)
app.command("link")(link_commands.link)
app.command("eval-link")(link_commands.eval_link)
app.command("corpus")(train_commands.corpus)
app.command("finetune")(transfer_commands.finetune)
app.command("evaluate")(transfer_commands.evaluate)
app.add_typer(analysis_commands.app, name="index")
app.command("eval-cwr")(analysis_commands.eval_cwr)
app.command("modularity")(analysis_commands.modularity)
app.command("parallel-spans")(analysis_commands.parallel_spans)


def main() -> None:
    """Entry point: run the app; library errors print as one line, without a traceback, and name the
    command line's own flags (``--overwrite``, not ``overwrite=True``)."""
    try:
        app()
    except MlukeError as exc:
        typer.echo(f"error: {exc.for_cli()}", err=True)
        sys.exit(1)
