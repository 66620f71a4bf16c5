"""Scoring answer sets against object sets (LM-KBC style): for N-M relations (P47 "shares border with",
P530 "diplomatic relation", ...) a subject has several true objects, and a probe with a probability
``threshold`` answers with every object above it, possibly none.

Per subject, with the rules of the official LM-KBC evaluation (repository lm-kbc/dataset2024, file
``evaluate.py``, functions ``precision``, ``recall``, ``f1_score`` and ``rows_to_dict``; lm-kbc/dataset2023's
``evaluate.py`` has the same empty-set rules), on the sets of answers and true objects (duplicates count once):

- an empty answer has precision 1, whatever the true objects;
- an empty true set gives recall 1, whatever the answer;
- otherwise precision = |answer & true| / |answer| and recall = |answer & true| / |true|;
- F1 = 2PR / (P + R), and 0 when P + R = 0.

So both empty scores 1/1/1; an empty answer to a subject with objects 1/0/0; any answer to a subject
with none 0/1/0. Over subjects the three are macro-averaged (the challenge's per-relation "macro-p/r/f1").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


def set_scores(answer: Collection[str], true: Collection[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of one subject's answer set against its true objects (see module docs)."""
    answer, true = set(answer), set(true)
    hits = len(answer & true)
    p = hits / len(answer) if answer else 1.0  # LM-KBC: nothing answered is never wrong
    r = hits / len(true) if true else 1.0  # LM-KBC: nothing to find is always found
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def macro_set_scores(pairs: Iterable[tuple[Collection[str], Collection[str]]]) -> dict[str, float | None]:
    """Macro-averaged precision, recall and F1 over (answer, true) pairs (``None`` without pairs)."""
    scores = [set_scores(a, t) for a, t in pairs]
    n = len(scores)
    return {
        name: (sum(s[i] for s in scores) / n if n else None) for i, name in enumerate(("precision", "recall", "F1"))
    }
