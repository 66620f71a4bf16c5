"""Language bias: the top false positive of one result and the per-language view of over-predicted objects."""

from __future__ import annotations

import pytest

from mluke.results import Prediction, ProbeResult, SubjectResult
from probes.bias import bias_by_language, language_bias


def _result(lang: str, mode: str, answers: list[tuple[str, str]]) -> ProbeResult:
    """Subjects with (gold, top-1 prediction) object keys; labels are the keys upper-cased."""
    rows = [
        SubjectResult(
            f"s{i}",
            f"S{i}",
            [gold],
            [gold.upper()],
            [Prediction(pred, pred.upper(), -0.1, mode, pred == gold)],
            1 if pred == gold else 2,
        )
        for i, (gold, pred) in enumerate(answers)
    ]
    return ProbeResult("[X] ... [Y]", lang, "P36", mode, False, 1, rows)  # type: ignore[arg-type]


def test_bias_by_language():
    ja = _result("ja", "entity", [("a", "tokyo"), ("b", "tokyo"), ("c", "tokyo"), ("tokyo", "tokyo"), ("d", "e")])
    en = _result("en", "entity", [("a", "a"), ("b", "london")])
    en_word = _result("en", "word", [("a", "b")])
    frame = bias_by_language([ja, en, en_word], top=None)
    tokyo = frame[(frame.lang == "ja") & (frame.key == "tokyo")].iloc[0]
    assert (tokyo.object, tokyo.predicted, tokyo.wrong, tokyo.gold) == ("TOKYO", 4, 3, 1)
    assert tokyo.share == pytest.approx(3 / 4) and tokyo.over == 3
    assert frame[frame.lang == "ja"].iloc[0].key == "tokyo"  # the most wrong first
    assert set(frame[frame.lang == "en"]["mode"]) == {"entity", "word"}
    assert not ((frame.lang == "ja") & (frame.key == "a")).any()  # never predicted: not listed
    assert list(frame.columns) == ["lang", "mode", "object", "key", "predicted", "wrong", "gold", "share", "over"]
    assert len(bias_by_language([ja], top=1)) == 1
    assert language_bias(ja)["top_false_positive_key"] == "tokyo" and language_bias(ja)["share"] == pytest.approx(0.75)
