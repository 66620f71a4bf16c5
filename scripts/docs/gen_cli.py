"""Write the CLI reference (``reference/cli.md``) at build time from the ``mluke`` typer app itself.

Walks the click command tree that typer builds and writes each command's ``--help`` text, so the page
always says what the installed code does. Importing :mod:`mluke.cli` is cheap: no torch, no models.
"""

from __future__ import annotations

from typing import Any

import mkdocs_gen_files
import typer.main

from mluke.cli import app

WIDTH = 100


def walk(command: Any, ctx: Any):
    """Yield ``(context, command)`` for the command and every subcommand under it, depth first.

    Duck-typed: typer builds its commands with its own copy of click, so a group is whatever lists
    subcommands.
    """
    yield ctx, command
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            child = sub.context_class(sub, info_name=name, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH)
            yield from walk(sub, child)


def main() -> None:
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="mluke", terminal_width=WIDTH, max_content_width=WIDTH)
    parts = [
        "# CLI reference\n",
        (
            "Every `mluke` command with its `--help`, generated from the command line's code when this site"
            " is built. What the commands are for, with examples: [Command line](../command-line.md).\n"
        ),
    ]
    for sub_ctx, command in walk(root, ctx):
        title = sub_ctx.command_path
        parts.append(f"## `{title}`\n\n```text\n{command.get_help(sub_ctx).rstrip()}\n```\n")
    with mkdocs_gen_files.open("reference/cli.md", "w") as out:
        out.write("\n".join(parts))
    mkdocs_gen_files.set_edit_path("reference/cli.md", "../mluke/cli/__init__.py")


main()
