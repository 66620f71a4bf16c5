"""What QA runs report: :class:`QaFineTuneReport` (:func:`probes.transfer.runs.qa.finetune_qa`) and
:class:`QaReport` with MLQA's G-XLT matrix (:func:`probes.transfer.runs.qa.evaluate_qa`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probes.report import TableReport
from probes.transfer.metrics.qa import gxlt_matrix

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject


@dataclass
class QaFineTuneReport:
    """What a QA fine-tuning run did: sizes, loss and dev F1 per epoch, linked names per question."""

    output: Path
    features: str
    train_size: int
    dev_size: int
    windows: int
    names_per_question: float
    history: list[dict[str, Any]]
    seconds: float
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        best = max(self.history, key=lambda h: h["dev"])
        return (
            f"fine-tuned qa ({self.features} features) on {self.train_size:,} questions ({self.windows:,} windows, "
            f"{self.names_per_question:.1f} linked names per question) in {self.seconds:,.0f} s; kept epoch "
            f"{best['epoch'] + 1} (dev F1 {100 * best['dev']:.1f}); wrote {self.output}"
        )


@dataclass
class QaReport(TableReport):
    """Zero-shot QA scores: ``rows`` (dataset, lang = context language, question_lang, questions, exact_match,
    f1, scorer, skipped) and, when asked for, MLQA's G-XLT F1 matrix ``gxlt`` keyed ``"c/q"``."""

    features: str
    model: str
    rows: list[dict[str, Any]]
    gxlt: dict[str, float] = field(default_factory=dict)
    gxlt_langs: list[str] = field(default_factory=list)

    head = ("features", "model")

    @property
    def average(self) -> dict[str, dict[str, float]]:
        """Mean EM and F1 per dataset over its same-language rows (as :meth:`averages`)."""
        return self.averages()

    def averages(self) -> dict[str, dict[str, float]]:
        """Mean EM and F1 per dataset over its same-language rows."""
        out: dict[str, dict[str, float]] = {}
        for name in dict.fromkeys(r["dataset"] for r in self.rows):
            mine = [r for r in self.rows if r["dataset"] == name and r["lang"] == r["question_lang"]]
            if mine:
                out[name] = {k: sum(r[k] for r in mine) / len(mine) for k in ("exact_match", "f1")}
        return out

    def to_dict(self) -> JsonObject:
        return {**super().to_dict(), "gxlt": {"langs": self.gxlt_langs, "f1": self.gxlt}}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows for printing (scores x100); each dataset's average after its rows."""
        rows: list[list[Any]] = []
        averages = self.averages()
        for name in dict.fromkeys(r["dataset"] for r in self.rows):
            mine = [r for r in self.rows if r["dataset"] == name and r["lang"] == r["question_lang"]]
            rows += [
                [
                    name,
                    r["lang"],
                    r["questions"],
                    round(100 * r["exact_match"], 1),
                    round(100 * r["f1"], 1),
                    r.get("scorer", ""),
                ]
                for r in mine
            ]
            if name in averages:
                rows.append(
                    [
                        name,
                        "average",
                        sum(r["questions"] for r in mine),
                        round(100 * averages[name]["exact_match"], 1),
                        round(100 * averages[name]["f1"], 1),
                        "/".join(dict.fromkeys(r.get("scorer", "") for r in mine)),
                    ]
                )
        return ["dataset", "lang", "questions", "EM", "F1", "scorer"], rows

    def gxlt_table(self) -> tuple[list[str], list[list[Any]]]:
        """The G-XLT F1 matrix (x100): a row per context language, a column per question language."""
        scores = {tuple(k.split("/")): v for k, v in self.gxlt.items()}
        return gxlt_matrix(scores, self.gxlt_langs)  # type: ignore[arg-type]
