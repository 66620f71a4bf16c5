"""LM-KBC (ISWC 2024 challenge, repository lm-kbc/dataset2024): its JSON lines, and its scores.

One subject-relation pair a line, the objects as Wikidata ids (QIDs) and names::

    {"SubjectEntityID": "Q183", "SubjectEntity": "Germany", "Relation": "countryLandBordersCountry",
     "ObjectEntitiesID": ["Q31", "Q142"], "ObjectEntities": ["Belgium", "France"]}

An empty ``ObjectEntitiesID`` is a subject with no object (the answer to give is the empty set). Predictions
use the same layout (``ObjectEntities`` may be left out). Scoring follows the challenge's ``evaluate.py``:

- pairs are keyed by (``SubjectEntity``, ``Relation``), the objects compared as sets of QIDs;
- per pair, precision, recall and F1 with the empty-set rules of :mod:`mluke.object_sets` (an empty
  prediction has precision 1; an empty gold set recall 1);
- per relation, the macro average over its pairs, and the micro scores of its summed true positives,
  predictions and gold objects (each 1.0 when its denominator is 0);
- over all relations, the macro average over **all pairs** (not a mean of the relations' averages) and the
  micro scores of the totals.

A gold pair without a prediction is an error naming it (the challenge's script stops there too).
Bad lines (not JSON, not an object, a missing or mistyped field) are counted and skipped, each named
``file:line``; a missing file or one without any row is a :class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError
from kb.files import file_bytes
from mluke.object_sets import set_scores
from probes.reading import ReadSet, Skips

#: The fields of a row: the subject's QID and name, the relation, the objects' QIDs and names.
FIELDS = ("SubjectEntityID", "SubjectEntity", "Relation", "ObjectEntitiesID", "ObjectEntities")
ALL = "*** All Relations ***"  #: the name of the all-relations line, as the challenge's script prints it


@dataclass(frozen=True)
class LmkbcRow:
    """One subject-relation pair and its objects (QIDs; names where given)."""

    subject_id: str
    subject: str
    relation: str
    object_ids: tuple[str, ...]
    objects: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The row in the challenge's layout."""
        return {
            "SubjectEntityID": self.subject_id,
            "SubjectEntity": self.subject,
            "Relation": self.relation,
            "ObjectEntitiesID": list(self.object_ids),
            "ObjectEntities": list(self.objects),
        }


@dataclass
class LmkbcDataset(ReadSet[LmkbcRow]):
    """Rows read from one file and the lines skipped (``path:line: reason``)."""

    rows: list[LmkbcRow]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None

    def records(self) -> list[LmkbcRow]:
        return self.rows

    @property
    def relations(self) -> tuple[str, ...]:
        return tuple(sorted({r.relation for r in self.rows}))

    def __repr__(self) -> str:
        skipped = sum(self.skipped.values())
        head = f"LmkbcDataset({len(self.rows):,} rows, {len(self.relations)} relations, skipped {skipped:,})"
        return self._described(head, self.examples_skipped)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _row(record: Any, objects_needed: bool) -> LmkbcRow | str:
    """The row of one JSON value, or why it cannot be read."""
    if not isinstance(record, dict):
        return "not a JSON object"
    need = ["SubjectEntity", "Relation", "ObjectEntitiesID"] + (["SubjectEntityID"] if objects_needed else [])
    missing = [k for k in need if k not in record]
    if missing:
        return f"missing field {', '.join(missing)}"
    if not all(isinstance(record.get(k, ""), str) for k in ("SubjectEntityID", "SubjectEntity", "Relation")):
        return "SubjectEntityID, SubjectEntity or Relation is not a string"
    if not _strings(record["ObjectEntitiesID"]) or not _strings(record.get("ObjectEntities", [])):
        return "ObjectEntitiesID or ObjectEntities is not a list of strings"
    return LmkbcRow(
        record.get("SubjectEntityID", ""),
        record["SubjectEntity"],
        record["Relation"],
        tuple(record["ObjectEntitiesID"]),
        tuple(record.get("ObjectEntities", [])),
    )


def read_lmkbc(path: str | os.PathLike[str], *, predictions: bool = False) -> LmkbcDataset:
    """Rows of an LM-KBC JSON lines file (see the module docs).

    Args:
        path: the file (UTF-8, one JSON object a line).
        predictions: a predictions file: ``SubjectEntityID`` may be missing (the script keys on the name).

    Returns:
        The :class:`LmkbcDataset`.

    Raises:
        InputFormatError: a missing file, one that is not UTF-8, or one without any row.
    """
    path = Path(path)
    data = file_bytes(path, expected="an LM-KBC JSON lines file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    skips = Skips()
    rows: list[LmkbcRow] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            skips.add(path, number, "not JSON", exc.msg)
            continue
        row = _row(record, not predictions)
        if isinstance(row, str):
            skips.add(path, number, row)
        else:
            rows.append(row)
    if not rows:
        raise InputFormatError(skips.nothing_read(path, "LM-KBC row"))
    return LmkbcDataset(rows, dict(skips.counts), skips.examples, str(path))


def write_lmkbc(rows: Iterable[LmkbcRow], path: str | os.PathLike[str]) -> Path:
    """Write rows as LM-KBC JSON lines (UTF-8); :func:`read_lmkbc` reads them back."""
    path = Path(path)
    path.write_text("".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@dataclass
class PairScore:
    """One subject-relation pair's scores and counts."""

    subject: str
    relation: str
    precision: float
    recall: float
    f1: float
    true_positives: int
    predicted: int
    gold: int


@dataclass
class LmkbcScores:
    """Per pair, per relation and over all relations (``relations[ALL]``): macro and micro P/R/F1, as the
    challenge's script prints them (``macro-p``, ``macro-r``, ``macro-f1``, ``micro-p``, ...)."""

    pairs: list[PairScore]
    relations: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def macro_f1(self) -> float:
        """The challenge's headline figure: macro F1 over all subject-relation pairs."""
        return self.relations[ALL]["macro-f1"]

    def to_dict(self) -> dict[str, Any]:
        """The per-relation scores and the per-pair scores, as JSON."""
        return {"relations": self.relations, "pairs": [vars(p) for p in self.pairs]}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows: one row per relation, then the all-relations row."""
        columns = ["relation", "pairs", "macro-p", "macro-r", "macro-f1", "micro-p", "micro-r", "micro-f1", "empty"]
        out = []
        for name, s in self.relations.items():
            out.append([name, int(s["pairs"])] + [round(s[c], 3) for c in columns[2:8]] + [int(s["empty"])])
        return columns, out


def _micro(tp: int, predicted: int, gold: int) -> tuple[float, float, float]:
    p = tp / predicted if predicted else 1.0
    r = tp / gold if gold else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _summary(pairs: Sequence[PairScore]) -> dict[str, float]:
    n = len(pairs)
    tp, predicted, gold = (sum(getattr(p, k) for p in pairs) for k in ("true_positives", "predicted", "gold"))
    micro = _micro(tp, predicted, gold)
    return {
        "pairs": n,
        "macro-p": sum(p.precision for p in pairs) / n,
        "macro-r": sum(p.recall for p in pairs) / n,
        "macro-f1": sum(p.f1 for p in pairs) / n,
        "micro-p": micro[0],
        "micro-r": micro[1],
        "micro-f1": micro[2],
        "empty": sum(1 for p in pairs if p.predicted == 0),
    }


def score_lmkbc(gold: Iterable[LmkbcRow], predicted: Iterable[LmkbcRow]) -> LmkbcScores:
    """Score predictions against gold rows by the challenge's rules (see the module docs).

    A repeated (subject, relation) keeps its last row, as the challenge's dictionary does.

    Raises:
        InputFormatError: a gold pair without a prediction (the first few are named).
    """
    gold_by = {(r.subject, r.relation): set(r.object_ids) for r in gold}
    pred_by = {(r.subject, r.relation): set(r.object_ids) for r in predicted}
    missing = [k for k in gold_by if k not in pred_by]
    if missing:
        named = ", ".join(f"{s!r} {r}" for s, r in missing[:3])
        raise InputFormatError(
            f"{len(missing)} subject-relation pairs of the gold file have no prediction (e.g. {named}); "
            "predict every pair, an empty ObjectEntitiesID for none"
        )
    pairs = []
    for subject, relation in sorted(gold_by, key=lambda k: (k[1], k[0])):
        g, p = gold_by[(subject, relation)], pred_by[(subject, relation)]
        precision, recall, f1 = set_scores(p, g)
        pairs.append(PairScore(subject, relation, precision, recall, f1, len(p & g), len(p), len(g)))
    scores = LmkbcScores(pairs)
    for relation in sorted({p.relation for p in pairs}):
        scores.relations[relation] = _summary([p for p in pairs if p.relation == relation])
    if pairs:
        scores.relations[ALL] = _summary(pairs)
    return scores


def eval_lmkbc(gold: str | os.PathLike[str], predictions: str | os.PathLike[str]) -> LmkbcScores:
    """Read a gold file and a predictions file and score them (what ``mluke eval-lmkbc`` does)."""
    return score_lmkbc(read_lmkbc(gold), read_lmkbc(predictions, predictions=True))


def rows_from_probe(result: Any, relation: str, names: dict[str, str] | None = None) -> list[LmkbcRow]:
    """LM-KBC prediction rows of a probing result run with ``threshold`` (:class:`mluke.results.ProbeResult`):
    one row per subject of the first mode, its answers' entity keys (QIDs) as the object set, possibly empty.

    Args:
        result: the probing result.
        relation: the challenge's relation name to write (e.g. ``countryLandBordersCountry``).
        names: subject key to the subject name the gold file uses (default: the result's label).
    """
    mode = result.results[0]
    rows = []
    for r in mode.rows:
        key = r.subject or ""
        name = (names or {}).get(key, r.label)
        answers = [p for p in r.predictions if p.key]
        rows.append(LmkbcRow(key, name, relation, tuple(p.key for p in answers), tuple(p.label for p in answers)))
    return rows
