"""Language bias of cloze predictions (mLUKE paper, Table 6).

For one template in one language: among the subjects whose top-1 prediction is
wrong, the most frequent wrong prediction and its share of all wrong
predictions. A share near 1 means the model answers the same thing whatever the
subject, a bias towards an object favoured by the prompt language.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def language_bias(result: Any) -> dict[str, Any]:
    """``{template, lang, relation, mode, false_predictions, top_false_positive, share}`` of a probe result."""
    wrong = Counter()
    labels = {}
    for row in result.rows:
        if row.gold and row.predictions and not row.predictions[0].correct:
            top = row.predictions[0]
            wrong[top.key] += 1
            labels[top.key] = top.label
    n = sum(wrong.values())
    key, count = wrong.most_common(1)[0] if wrong else (None, 0)
    return {"template": result.template, "lang": result.lang, "relation": result.relation, "mode": result.mode,
            "false_predictions": n, "top_false_positive": labels.get(key) if key else None,
            "top_false_positive_key": key, "share": count / n if n else 0.0}
