"""ReCoRD's scores, under the rules of its official evaluation script (``evaluate.py`` of ReCoRD v1.0, which
takes them from SQuAD v1.1's): an answer is normalised by lower-casing, dropping the characters of
:data:`string.punctuation`, dropping the words ``a``, ``an``, ``the`` and collapsing whitespace; per query, exact
match (1 or 0) and bag-of-tokens F1 (0 when no token is shared) are each the maximum over the query's gold
answers; both are averaged over the queries, and a query without a prediction scores 0. These are the rules of
:func:`probes.transfer.metrics.qa.qa_scores` with the ``"squad"`` scorer, which this module applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kb.errors import OptionError
from probes.transfer.metrics.qa import qa_scores


def record_scores(predictions: Mapping[str, str], golds: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Mean EM and F1 (fractions in [0, 1]; reported x100) of predicted answers against the gold answers of each
    query, as ReCoRD's official script computes them (see the module docs).

    Queries without any gold answer (test files) cannot be scored: they are left out and counted.

    Args:
        predictions: the predicted answer text by query id (ids not in ``golds`` are ignored).
        golds: the gold answer texts by query id.

    Returns:
        ``exact_match``, ``f1``, ``queries`` (scored), ``missing`` (scored queries without a prediction; they score
        0) and ``unscored`` (queries without gold answers).

    Raises:
        OptionError: no query with a gold answer.
    """
    scored = {qid: list(answers) for qid, answers in golds.items() if answers}
    if not scored:
        raise OptionError("no ReCoRD query with a gold answer to score (a test file without answers?)")
    result = qa_scores(predictions, scored, "en", "squad")
    return {
        "exact_match": float(result["exact_match"]),
        "f1": float(result["f1"]),
        "queries": len(scored),
        "missing": int(result["missing"]),
        "unscored": len(golds) - len(scored),
    }
