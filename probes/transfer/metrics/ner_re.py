"""Scores for cross-lingual transfer: entity-level NER F1 (seqeval, strict) and relation macro F1 (KBP37 / RELX)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from kb.errors import OptionError
from probes.transfer.readers.ner import NerSentence
from probes.transfer.readers.ner_tags import spans_to_tags
from probes.transfer.readers.relations import relation_type


def f1_of(precision: float, recall: float) -> float:
    """The harmonic mean of ``precision`` and ``recall`` (0 when both are 0)."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def ratio(num: int, den: int) -> float:
    """``num / den``, 0 when ``den`` is 0."""
    return num / den if den else 0.0


def check_lengths(gold: Sequence[object], predicted: Sequence[object], what: str) -> None:
    """Refuses gold and predicted ``what`` (sentences, labels, examples) that do not pair up one to one."""
    if len(gold) != len(predicted):
        raise OptionError(f"{len(gold)} gold {what} but {len(predicted)} predictions; they must pair up one to one")


# -- NER -------------------------------------------------------------------------------------------------------------


def ner_scores(gold: Sequence[NerSentence], predicted: Sequence[Sequence[tuple[int, int, str]]]) -> dict[str, Any]:
    """Entity-level precision, recall and F1 of predicted spans, one list of spans per gold sentence.

    Both sides become IOB2 tags (:func:`~probes.transfer.readers.ner_tags.spans_to_tags`) scored by seqeval in
    strict mode: an entity counts only with the exact boundaries and type (a partial match is one false positive
    and one false negative).

    Args:
        gold: the gold sentences.
        predicted: the predicted spans ``(first, end, type)`` of each gold sentence.

    Returns:
        ``precision``, ``recall`` and ``f1`` (micro over all entities), ``support`` (gold entities) and
        ``per_type``: {type: {precision, recall, f1, support}} for each type in gold or predictions. Zero where
        nothing was predicted or nothing is gold.
    """
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2

    check_lengths(gold, predicted, "sentences")
    y_true = [spans_to_tags(len(s.words), s.spans) for s in gold]
    y_pred = [spans_to_tags(len(s.words), p) for s, p in zip(gold, predicted)]
    if not any(t != "O" for tags in (*y_true, *y_pred) for t in tags):
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "per_type": {}}
    report = classification_report(y_true, y_pred, mode="strict", scheme=IOB2, output_dict=True, zero_division=0)
    micro = report.pop("micro avg")
    for key in ("macro avg", "weighted avg"):
        report.pop(key, None)

    def row(r: dict[str, Any]) -> dict[str, Any]:
        return {
            "precision": float(r["precision"]),
            "recall": float(r["recall"]),
            "f1": float(r["f1-score"]),
            "support": int(r["support"]),
        }

    return {**row(micro), "per_type": {t: row(r) for t, r in sorted(report.items())}}


# -- relation extraction ---------------------------------------------------------------------------------------------


def re_scores(gold_labels: Sequence[str], predicted_labels: Sequence[str]) -> dict[str, Any]:
    """Macro F1 over relation types, as the SemEval-2010 task 8 official scorer and the RELX paper count it.

    A relation type is a label without its direction (KBP37: 18 types from 36 directed labels). For each pair
    (gold, predicted):

    * equal labels, not ``no_relation``: a true positive of that type (the direction must match);
    * otherwise a predicted relation is a false positive of its type and a gold relation a false negative of its
      type (a wrong direction is both, for the same type);
    * ``no_relation`` is never a type: a gold ``no_relation`` predicted as a relation is a false positive of that
      relation's type, a relation predicted as ``no_relation`` a false negative, and ``no_relation`` predicted as
      ``no_relation`` counts nowhere but in accuracy.

    Args:
        gold_labels: the gold label of each example.
        predicted_labels: the predicted label of each example.

    Returns:
        ``macro_f1``, the mean of the per-type F1 over the types (sorted in ``types``) that occur in the gold
        labels or in the predictions, ``no_relation`` excluded; ``micro_f1``, the F1 of the true/false positives
        and negatives summed over those types; ``accuracy``, the share of exactly equal labels (``no_relation``
        included); ``per_type``: {type: {precision, recall, f1, support (gold), predicted, correct}}. Every score
        is 0.0 when there is no relation at all.

    Raises:
        OptionError: labels that are neither ``no_relation`` nor ``type(e1,e2)``/``type(e2,e1)``, or lists of
            different lengths.
    """
    return relation_scores(gold_labels, predicted_labels, relation_type)


def relation_scores(
    gold_labels: Sequence[str], predicted_labels: Sequence[str], type_of: Callable[[str], str | None]
) -> dict[str, Any]:
    """The counts and scores of :func:`re_scores`, with ``type_of`` giving each label's relation type (None for
    ``no_relation``).

    Args:
        gold_labels: the gold label of each example.
        predicted_labels: the predicted label of each example.
        type_of: a label's type (:func:`~probes.transfer.readers.relations.relation_type` for KBP37).

    Returns:
        The dictionary :func:`re_scores` describes.

    Raises:
        OptionError: lists of different lengths, or what ``type_of`` raises.
    """
    check_lengths(gold_labels, predicted_labels, "labels")
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for g, p in zip(gold_labels, predicted_labels):
        g_type, p_type = type_of(g), type_of(p)
        if g == p:
            if g_type:
                tp[g_type] += 1
            continue
        if p_type:
            fp[p_type] += 1
        if g_type:
            fn[g_type] += 1
    types = sorted(set(tp) | set(fp) | set(fn))
    per_type = {}
    for t in types:
        precision, recall = ratio(tp[t], tp[t] + fp[t]), ratio(tp[t], tp[t] + fn[t])
        per_type[t] = {
            "precision": precision,
            "recall": recall,
            "f1": f1_of(precision, recall),
            "support": tp[t] + fn[t],
            "predicted": tp[t] + fp[t],
            "correct": tp[t],
        }
    all_tp, all_fp, all_fn = sum(tp.values()), sum(fp.values()), sum(fn.values())
    return {
        "macro_f1": sum(s["f1"] for s in per_type.values()) / len(types) if types else 0.0,
        "micro_f1": f1_of(ratio(all_tp, all_tp + all_fp), ratio(all_tp, all_tp + all_fn)),
        "accuracy": ratio(sum(g == p for g, p in zip(gold_labels, predicted_labels)), len(gold_labels)),
        "per_type": per_type,
        "types": types,
    }
