"""Entity typing scores: loose micro precision, recall and F1 (Ling and Weld, 2012), as LUKE (Table 1) and
KnowBert (Table 7) report them on Open Entity, following ERNIE's (Zhang et al., 2019) evaluation code; and the
loose macro scores that Open Entity's own scorer (uwnlp/open_type) prints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from probes.transfer.metrics.ner_re import check_lengths, f1_of, ratio


def typing_scores(gold: Sequence[Collection[str]], predicted: Sequence[Collection[str]]) -> dict[str, Any]:
    """Loose micro scores of predicted type sets against gold type sets, one pair per example.

    Summed over the examples: ``correct`` = |predicted ∩ gold|, ``predicted`` = |predicted|, ``gold`` = |gold|;
    precision = correct / predicted, recall = correct / gold (each 0.0 when its denominator is 0), F1 their
    harmonic mean. An example with an empty prediction adds nothing to the precision's denominator.

    Args:
        gold: the gold types of each example.
        predicted: the predicted types of each example.

    Returns:
        ``precision``, ``recall``, ``f1`` (loose micro), ``macro_precision``, ``macro_recall``, ``macro_f1``
        (loose macro, :func:`loose_macro`), ``accuracy`` (share of examples whose predicted set
        equals the gold set: strict accuracy), ``correct``, ``predicted``, ``gold`` (the label counts), and
        ``per_type``: {type: {precision, recall, f1, support}} for each type in gold or predictions.

    Raises:
        OptionError: lists of different lengths.
    """
    check_lengths(gold, predicted, "examples")
    tp: Counter[str] = Counter()
    n_pred: Counter[str] = Counter()
    n_gold: Counter[str] = Counter()
    exact = 0
    for g, p in zip(gold, predicted):
        g_set, p_set = set(g), set(p)
        tp.update(g_set & p_set)
        n_pred.update(p_set)
        n_gold.update(g_set)
        exact += g_set == p_set
    correct, pred_total, gold_total = sum(tp.values()), sum(n_pred.values()), sum(n_gold.values())
    precision, recall = ratio(correct, pred_total), ratio(correct, gold_total)
    per_type = {}
    for t in sorted(set(n_pred) | set(n_gold)):
        t_precision, t_recall = ratio(tp[t], n_pred[t]), ratio(tp[t], n_gold[t])
        per_type[t] = {
            "precision": t_precision,
            "recall": t_recall,
            "f1": f1_of(t_precision, t_recall),
            "support": n_gold[t],
        }
    macro_p, macro_r = loose_macro(gold, predicted)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1_of(precision, recall),
        "macro_precision": macro_p,
        "macro_recall": macro_r,
        "macro_f1": f1_of(macro_p, macro_r),
        "accuracy": ratio(exact, len(gold)),
        "correct": correct,
        "predicted": pred_total,
        "gold": gold_total,
        "per_type": per_type,
    }


def loose_macro(gold: Sequence[Collection[str]], predicted: Sequence[Collection[str]]) -> tuple[float, float]:
    """Loose macro precision and recall, as Open Entity's scorer computes them: precision is the mean over the
    examples with a non-empty prediction of |predicted ∩ gold| / |predicted|, recall the mean over the examples
    with gold types of |predicted ∩ gold| / |gold| (each 0.0 when no example counts); F1 is their harmonic mean.

    Raises:
        OptionError: lists of different lengths.
    """
    check_lengths(gold, predicted, "examples")
    p_sum = r_sum = 0.0
    n_p = n_r = 0
    for g, p in zip(gold, predicted):
        g_set, p_set = set(g), set(p)
        if p_set:
            n_p += 1
            p_sum += len(g_set & p_set) / len(p_set)
        if g_set:
            n_r += 1
            r_sum += len(g_set & p_set) / len(g_set)
    return (p_sum / n_p if n_p else 0.0), (r_sum / n_r if n_r else 0.0)
