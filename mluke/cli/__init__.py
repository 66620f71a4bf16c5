"""The ``mluke`` command line. Subcommands are thin wrappers over the Python API."""

from __future__ import annotations

import sys

import typer

from kb.errors import MlukeError
from mluke.cli import kb_commands, model_commands

app = typer.Typer(
    help="mluke: multilingual knowledge probing and entity linking with mLUKE.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(kb_commands.app, name="kb")
app.command("pretrain")(model_commands.pretrain)
app.command("probe")(model_commands.probe)
app.command("eval-mlama")(model_commands.eval_mlama)
app.command("eval-demo")(model_commands.eval_demo)
app.command("link")(model_commands.link)
app.command("eval-link")(model_commands.eval_link)
app.command("corpus")(model_commands.corpus)


def main() -> None:
    """Entry point: run the app; library errors print as one line, without a traceback, and name the
    command line's own flags (``--overwrite``, not ``overwrite=True``)."""
    try:
        app()
    except MlukeError as exc:
        typer.echo(f"error: {exc.for_cli()}", err=True)
        sys.exit(1)
