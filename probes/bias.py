"""Language bias of cloze predictions (mLUKE paper, Table 6).

For one template in one language: among the subjects whose top-1 prediction is
wrong, the most frequent wrong prediction and its share of all wrong
predictions. A share near 1 means the model answers the same thing whatever the
subject, a bias towards an object favoured by the prompt language.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import pandas as pd

    from mluke.results import ProbeResult


def language_bias(result: ProbeResult) -> dict[str, Any]:
    """``{template, lang, relation, mode, false_predictions, top_false_positive, share}`` of a probe result."""
    wrong: Counter[str] = Counter()
    labels: dict[str, str] = {}
    for row in result.rows:
        if row.gold and row.predictions and not row.predictions[0].correct:
            top = row.predictions[0]
            wrong[top.key] += 1
            labels[top.key] = top.label
    n = sum(wrong.values())
    key, count = wrong.most_common(1)[0] if wrong else (None, 0)
    return {
        "template": result.template,
        "lang": result.lang,
        "relation": result.relation,
        "mode": result.mode,
        "false_predictions": n,
        "top_false_positive": labels.get(key) if key else None,
        "top_false_positive_key": key,
        "share": count / n if n else 0.0,
    }


def bias_by_language(results: Iterable[ProbeResult], *, top: int | None = 5) -> pd.DataFrame:
    """Which objects each language over-predicts: a DataFrame with one row per (lang, mode, object) among the
    top-1 predictions of ``results`` (probe results of any relations and languages), sorted by language, mode and
    wrong predictions.

    Columns: ``predicted`` (subjects for which it is the top-1 answer), ``wrong`` (of those, how many are
    wrong), ``gold`` (subjects for which it is a correct answer), ``share`` (its part of all the language's wrong
    top-1 predictions in that mode), ``over`` (``predicted - gold``: how much more often the language says it than
    it is true). ``top``: rows kept per (lang, mode), the most wrong first (``None``: all).
    """
    import pandas as pd

    stats: dict[tuple[str, str, str], dict[str, Any]] = {}
    for result in results:
        for row in result.rows:
            if not row.gold or not row.predictions:
                continue
            best = row.predictions[0]
            entry = stats.setdefault(
                (result.lang, result.mode, best.key), {"label": best.label, "predicted": 0, "wrong": 0, "gold": 0}
            )
            entry["predicted"] += 1
            entry["wrong"] += 0 if best.correct else 1
            for key, label in zip(row.gold, row.gold_labels):
                stats.setdefault(
                    (result.lang, result.mode, key), {"label": label, "predicted": 0, "wrong": 0, "gold": 0}
                )["gold"] += 1
    columns = ["lang", "mode", "object", "key", "predicted", "wrong", "gold", "share", "over"]
    frame = pd.DataFrame(
        [{"lang": lang, "mode": mode, "object": s["label"], "key": key, **s} for (lang, mode, key), s in stats.items()],
        columns=[*columns, "label"],
    )
    frame = frame.drop(columns="label")
    wrong_total = frame.groupby(["lang", "mode"])["wrong"].transform("sum")
    frame["share"] = (frame["wrong"] / wrong_total.where(wrong_total > 0)).fillna(0.0)
    frame["over"] = frame["predicted"] - frame["gold"]
    frame = frame[frame["predicted"] > 0].sort_values(
        ["lang", "mode", "wrong", "predicted", "object"], ascending=[True, True, False, False, True]
    )
    if top is not None:
        frame = frame.groupby(["lang", "mode"], sort=False).head(top)
    return cast("pd.DataFrame", frame.reset_index(drop=True)[columns])  # pandas-stubs: frame[list] is Any
