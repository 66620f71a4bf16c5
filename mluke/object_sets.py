"""Scoring answer sets against object sets (LM-KBC style): for N-M relations (P47 "shares border with",
P530 "diplomatic relation", ...) a subject has several true objects, and a probe with a probability
``threshold`` answers with every object above it, possibly none.

Per subject, with the LM-KBC 2023 conventions for empty sets: when the true set is empty, precision
and recall are 1 for an empty answer and 0 otherwise; when only the answer is empty they are 0;
otherwise precision = |answer & true| / |answer|, recall = |answer & true| / |true|. F1 is their
harmonic mean (0 when both are 0). Over subjects the three are macro-averaged.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


def set_scores(answer: Collection[str], true: Collection[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of one subject's answer set against its true objects (see module docs)."""
    answer, true = set(answer), set(true)
    if not true:
        p = r = 1.0 if not answer else 0.0
    elif not answer:
        p = r = 0.0
    else:
        hits = len(answer & true)
        p, r = hits / len(answer), hits / len(true)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def macro_set_scores(pairs: Iterable[tuple[Collection[str], Collection[str]]]) -> dict[str, float | None]:
    """Macro-averaged precision, recall and F1 over (answer, true) pairs (``None`` without pairs)."""
    scores = [set_scores(a, t) for a, t in pairs]
    n = len(scores)
    return {name: (sum(s[i] for s in scores) / n if n else None) for i, name in enumerate(("precision", "recall", "F1"))}
