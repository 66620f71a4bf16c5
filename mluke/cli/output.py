"""Printing results as tables and writing them as JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def console() -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    if sys.stdout.isatty():
        return Console(soft_wrap=False)
    return Console(soft_wrap=False, width=160)


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print ``rows`` as a table; numbers are right-aligned."""
    table = Table(title=title, show_lines=False)
    for i, col in enumerate(columns):
        numeric = bool(rows) and all(isinstance(r[i], (int, float)) for r in rows)
        table.add_column(col, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row))
    console().print(table)


def write_json(data: Any, dest: str) -> None:
    """Write ``data`` as JSON to a file, or to stdout when ``dest`` is ``-``."""
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False)
    if dest == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(dest).write_text(text + "\n", encoding="utf-8")


def write_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]], dest: str) -> None:
    """Write rows as CSV to a file, or to stdout when ``dest`` is ``-``."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(columns)
    writer.writerows(rows)
    if dest == "-":
        sys.stdout.write(buf.getvalue())
    else:
        Path(dest).write_text(buf.getvalue(), encoding="utf-8")
