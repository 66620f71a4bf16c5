"""Output: the ``--json``/``--csv`` options, checking output files before the work, printing results as tables;
files are written by :mod:`kb.files` (one policy for every output)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kb.files import check_output, write_csv, write_json


def output_option(flag: str, what: str, fmt: str, *, to_file: bool = True, lead: str = "Write") -> Any:
    """An option naming an output file (``'-'``: standard output), its help worded as every other one's:
    "{lead} {what} as {fmt}[ to this file] ('-' for stdout)."

    Args:
        flag: the option's flag, e.g. ``"--gxlt-csv"``.
        what: what is written, e.g. ``"the per-language table"``.
        fmt: the file format as the help names it (``"JSON"``, ``"CSV"``).
        to_file: say "to this file" after the format.
        lead: the help's first words (``"qa: write"`` for a task-specific option).

    Returns:
        The ``typer.Option`` to put in an ``Annotated[str | None, ...]`` parameter.
    """
    where = " to this file" if to_file else ""
    return typer.Option(flag, help=f"{lead} {what} as {fmt}{where} ('-' for stdout).")


def json_option(what: str, *, to_file: bool = True) -> Any:
    """``--json``: write ``what`` as JSON (see :func:`output_option`)."""
    return output_option("--json", what, "JSON", to_file=to_file)


def csv_option(what: str, *, to_file: bool = True) -> Any:
    """``--csv``: write ``what`` as CSV (see :func:`output_option`)."""
    return output_option("--csv", what, "CSV", to_file=to_file)


def check_outputs(overwrite: bool, *dests: str | None) -> list[str]:
    """The output files given (``None`` left out), each checked before any work starts, so a long run
    does not end in a refusal (see :func:`kb.files.check_output`)."""
    given = [d for d in dests if d]
    for dest in given:
        if dest != "-":
            check_output(dest, overwrite=overwrite)
    return given


def write_outputs(
    json_out: str | None,
    csv_out: str | None,
    *,
    overwrite: bool,
    data: Callable[[], Any],
    table: Callable[[], tuple[Sequence[str], Sequence[Sequence[Any]]]] | None = None,
) -> bool:
    """Write the ``--json`` and ``--csv`` files given; each is computed only when its file is asked for.

    Args:
        json_out: the ``--json`` destination (``'-'``: standard output), or ``None``.
        csv_out: the ``--csv`` destination, or ``None``.
        overwrite: replace existing files.
        data: makes what ``--json`` writes.
        table: makes the ``(columns, rows)`` that ``--csv`` writes.

    Returns:
        Whether one of them went to standard output (then the command prints nothing else).
    """
    if json_out:
        write_json(data(), json_out, overwrite=overwrite)
    if csv_out and table is not None:
        write_csv(*table(), csv_out, overwrite=overwrite)
    return "-" in (json_out, csv_out)


def records_table(keys: Sequence[str], records: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """``records`` as the columns and rows that ``--csv`` writes, one column per key of ``keys``."""
    return list(keys), [[r[k] for k in keys] for r in records]


def wrote(outputs: list[str]) -> None:
    """Say which files were written (standard output, ``-``, is not a file)."""
    for dest in outputs:
        if dest != "-":
            typer.echo(f"wrote {dest}")


def console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(soft_wrap=False, stderr=stderr)
    return Console(soft_wrap=False, width=160, stderr=stderr)


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print ``rows`` as a table; numbers are right-aligned. Text is shown as it is: a "[ja, P36]"
    in a title or a "[X]" in a template is not taken for rich markup."""
    out = console()
    table = Table(title=escape(title) if title else None, show_lines=False)
    for i, col in enumerate(columns):
        numeric = bool(rows) and all(isinstance(r[i], (int, float)) for r in rows)
        table.add_column(escape(col), justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(f"{v:,}" if isinstance(v, int) else escape(str(v)) for v in row))
    out.print(table)


def show_report(
    report: Any, title: str, *, json_out: str | None, csv_out: str | None, overwrite: bool, outputs: list[str]
) -> None:
    """Write ``report`` (a :class:`probes.report.TableReport`) to the ``--json``/``--csv`` files given,
    then print its table unless one of them is standard output."""
    if json_out:
        report.to_json(json_out, overwrite=overwrite)
    if csv_out:
        report.to_csv(csv_out, overwrite=overwrite)
    if "-" in outputs:
        return
    columns, rows = report.table()
    print_table(title, columns, rows)
    wrote(outputs)
