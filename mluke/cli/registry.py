"""Subcommands that other packages add to the ``mluke`` command line, declared as entry points of the group
``mluke.commands`` in their distribution's metadata: ``probes`` adds its evaluations and analyses this way
(``eval-mlama = "probes.cli.mlama_commands:EVAL_MLAMA"`` in pyproject.toml), so that the command line imports
nothing of ``probes`` itself. An entry point's name is the command's and it names a :class:`Command`.
Entry points appear once the distribution is installed (``pip install -e .`` again after adding one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import typer

#: The entry-point group of ``mluke`` subcommands.
GROUP = "mluke.commands"


@dataclass(frozen=True)
class Command:
    """One ``mluke`` subcommand: a function (a command) or a :class:`typer.Typer` (a group of commands)."""

    name: str  #: what is typed after ``mluke``
    short_help: str  #: its line in ``mluke --help``
    run: Callable[..., Any] | typer.Typer
    after: str | None = None  #: the command it is listed after in ``mluke --help`` (None: at the end)


def discovered(group: str = GROUP) -> list[Command]:
    """The commands the installed distributions declare in ``group``.

    Raises:
        TypeError: an entry point that does not name a :class:`Command` of its own name.
    """
    from importlib.metadata import entry_points

    found = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        command = point.load()
        if not isinstance(command, Command) or command.name != point.name:
            raise TypeError(f"entry point {point.name} = {point.value} ({group}) must name a Command {point.name!r}")
        found.append(command)
    return found


def ordered(own: Iterable[Command], added: Iterable[Command]) -> list[Command]:
    """``own`` in its order, each added command right after the one it names (``after``, which may itself be
    an added one), those naming none or an unknown command at the end, by name."""
    out = list(own)
    pending = list(added)
    while True:
        names = [c.name for c in out]
        command = next((c for c in pending if c.after is not None and c.after in names), None)
        if command is None:
            return out + sorted(pending, key=lambda c: c.name)
        out.insert(names.index(command.after or "") + 1, command)  # `after` is one of names: just checked
        pending.remove(command)


def register(app: typer.Typer, commands: Iterable[Command]) -> None:
    """Adds ``commands`` to ``app`` in order (typer lists commands first, then groups)."""
    for command in commands:
        if isinstance(command.run, typer.Typer):
            app.add_typer(command.run, name=command.name, short_help=command.short_help)
        else:
            app.command(command.name, short_help=command.short_help)(command.run)
