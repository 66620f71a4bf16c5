"""Shared pieces of the dataset readers: reading a distributed data file (UTF-8, or latin-1 as some
CoNLL files are), and counting the records a reader skips (a count per reason and the first few
``file:line`` examples), so that a bad line inside a large file is reported, not fatal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from kb.files import file_bytes

MAX_EXAMPLES = 3  # examples kept per reason
R = TypeVar("R")


def read_data_lines(path: Path) -> tuple[list[str], str]:
    """The lines of a data file (without line ends) and the encoding used: UTF-8 if valid, else latin-1.

    Lines are split on ``\\n`` only: latin-1 bytes such as 0x85 must not end a line.
    """
    data = file_bytes(path, expected="a data file")
    try:
        text, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    text = text.removeprefix("\ufeff")
    return [line.rstrip("\r") for line in text.split("\n")], encoding


class Skips:
    """Counts of skipped records per reason and the first few examples of each."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: list[str] = []

    def add(self, path: Path, line: int | str, reason: str, detail: str = "") -> None:
        """Count a skipped record; ``line`` is its line number, or a name such as ``"question q7"`` in files
        whose records are not lines."""
        self.counts[reason] += 1
        if self.counts[reason] <= MAX_EXAMPLES:
            where = f"{path}:{line}" if isinstance(line, int) else f"{path} [{line}]"
            self.examples.append(f"{where}: {reason}" + (f" ({detail})" if detail else ""))

    def nothing_read(self, path: Path, what: str) -> str:
        """The message for a file from which no ``what`` could be read: what was skipped, or "empty file?"."""
        detail = "; ".join(f"{reason}: {n}" for reason, n in self.counts.items())
        return f"{path}: no {what} found" + (
            f" (skipped {detail}; e.g. {self.examples[0]})" if detail else " (empty file?)"
        )


class ReadSet(Generic[R]):
    """Mixin of the data sets the readers return: iterating and ``len`` go over the records read
    (:meth:`records`), and the repr lists what was skipped (``skipped``: count per reason)."""

    skipped: dict[str, int]

    def records(self) -> Sequence[R]:  # pragma: no cover - every data set defines it
        """The records read, in file order."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[R]:
        return iter(self.records())

    def __len__(self) -> int:
        return len(self.records())

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the records name (a record without one, e.g. a CoNLL sentence, adds none), sorted."""
        return tuple(sorted({lang for r in self.records() if (lang := getattr(r, "lang", None))}))

    def _described(self, head: str, examples: Iterable[str]) -> str:
        """``head``, then a line per skip reason with its count, then the ``examples`` of skipped records."""
        return "\n".join(
            [
                head,
                *(f"  {reason}: {n:,}" for reason, n in self.skipped.items()),
                *(f"  e.g. {e}" for e in examples),
            ]
        )
