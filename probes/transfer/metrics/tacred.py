"""TACRED's score (Zhang et al., 2017; LUKE Table 2, KnowBert Table 4): micro precision, recall and F1 over the
positive relations, ``no_relation`` excluded, with the rules of the data set's official scorer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kb.errors import OptionError
from probes.transfer.metrics.ner_re import f1_of, relation_scores
from probes.transfer.readers.relations import NO_RELATION


def _relation(label: str) -> str | None:
    """A TACRED label as its own relation type (no direction), None for ``no_relation``."""
    if not isinstance(label, str) or not label:
        raise OptionError(f"not a relation label: {label!r}; expected {NO_RELATION!r} or a relation name")
    return None if label == NO_RELATION else label


def tacred_scores(gold_labels: Sequence[str], predicted_labels: Sequence[str]) -> dict[str, Any]:
    """TACRED's micro scores, next to the macro F1 and accuracy of :func:`~probes.transfer.metrics.ner_re.re_scores`.

    Over the examples: ``predicted`` counts the predictions that are not ``no_relation`` (a gold ``no_relation``
    predicted as a relation counts here, against precision), ``gold`` the gold labels that are not
    ``no_relation``, ``correct`` the examples predicted as their gold relation (not ``no_relation``).
    precision = correct / predicted (1.0 when nothing is predicted, as the official scorer has it), recall =
    correct / gold (0.0 when no gold relation), F1 their harmonic mean (0.0 when both are 0).

    Args:
        gold_labels: the gold label of each example.
        predicted_labels: the predicted label of each example.

    Returns:
        ``precision``, ``recall``, ``f1`` (the TACRED score), ``correct``, ``predicted``, ``gold``, and what
        :func:`~probes.transfer.metrics.ner_re.relation_scores` gives with each label its own type:
        ``macro_f1``, ``micro_f1`` (equal to ``f1``), ``accuracy``, ``per_type``, ``types``.

    Raises:
        OptionError: lists of different lengths, or a label that is not a non-empty string.
    """
    scores = relation_scores(gold_labels, predicted_labels, _relation)
    per_type = scores["per_type"].values()
    correct, predicted, gold = (sum(s[k] for s in per_type) for k in ("correct", "predicted", "support"))
    precision = correct / predicted if predicted else 1.0
    recall = correct / gold if gold else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1_of(precision, recall),
        "correct": correct,
        "predicted": predicted,
        "gold": gold,
        **scores,
    }
