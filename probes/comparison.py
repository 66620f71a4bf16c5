"""Several models on one benchmark, side by side: each model's report in turn (one model in memory at a time),
then one table with a column of accuracies per model, what ``mluke eval-bear`` and ``mluke eval-xfactr`` print
for several ``--model``.

A report takes part through two methods: ``scores()``, its accuracies keyed by the labels of their row (a
relation, or a language and a relation; overall rows included), and ``to_dict()``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from mluke.opening import ModelSource


class ScoredReport(Protocol):
    """What a benchmark's report gives a :class:`Comparison`."""

    def scores(self) -> dict[tuple[str, ...], float]:
        """Accuracies (0-1) keyed by their row's labels, in the order of the report's table."""
        ...

    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=ScoredReport)


def model_name(model: ModelSource) -> str:
    """How a comparison names a model: the folder or hub name given, ``demo`` for the embedded demo model, else
    (a loaded bundle) the folder its tokenizer came from."""
    if model is None:
        return "demo"
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    tokenizer = model[1] if len(model) > 1 else None  # a bundle: (model, tokenizer, entity_vocab)
    source = getattr(tokenizer, "source_dir", None)
    return str(source) if source is not None else "model"


@dataclass
class Comparison(Generic[R]):
    """One report per model, in the order given, and the names of their row labels (``keys``)."""

    keys: tuple[str, ...]
    models: list[str]
    reports: list[R]

    def row_labels(self) -> list[tuple[str, ...]]:
        """Every row any report has, in the order they first appear."""
        return list(dict.fromkeys(label for r in self.reports for label in r.scores()))

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """The row labels, then one column per model: accuracy x 100 (2 decimals), "-" where a model has none."""
        scores = [r.scores() for r in self.reports]
        rows = [
            [*label, *(round(100 * s[label], 2) if label in s else "-" for s in scores)] for label in self.row_labels()
        ]
        return [*self.keys, *self.models], rows

    def records(self) -> tuple[list[str], list[list[Any]]]:
        """One row per (model, row label) with its accuracy x 100: the long table ``--csv`` writes."""
        rows = [
            [name, *label, round(100 * value, 2)]
            for name, report in zip(self.models, self.reports)
            for label, value in report.scores().items()
        ]
        return ["model", *self.keys, "accuracy"], rows

    def to_dict(self) -> dict[str, Any]:
        """Each model's report (its ``to_dict()``) under its name, in order."""
        return {"models": [{"model": name, **r.to_dict()} for name, r in zip(self.models, self.reports)]}


def compare(models: Sequence[ModelSource], run: Callable[[ModelSource], R], keys: Sequence[str]) -> Comparison[R]:
    """``run`` for each model in turn (its report is kept, the model is not), side by side.

    Args:
        models: the models, in the order of the table's columns (a single folder or name counts as one model).
        run: scores one model on the benchmark.
        keys: the names of the row labels of the reports' ``scores()``.
    """
    if isinstance(models, (str, os.PathLike)):
        models = [models]  # one model, not the letters of its name
    return Comparison(tuple(keys), [model_name(m) for m in models], [run(m) for m in models])
