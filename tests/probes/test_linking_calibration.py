"""Fitting the linker's confidence calibration on the tiny demo, with and without kb coherence, and the rule
that picks the shipped default."""

import pytest

from mluke.linking.calibration import FEATURES, KB_FEATURES, Calibration
from probes.linking_calibration import (
    CalibrationReport,
    NilScores,
    calibrate,
    calibration_instances,
    choose_default,
    held_out_recall,
    meets_default_rule,
)
from probes.linking_calibration_data import SETS


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    from mluke.linking.linker import Linker

    return Linker(
        tiny_demo, embedded_db, languages=["de", "en", "es", "fr", "id", "it", "ja", "nl", "pt", "sv", "vi", "zh"]
    )


def test_calibrate_with_and_without_kb_coherence(tiny_demo, embedded_db, linker):
    instances = calibration_instances(linker, tiny_demo, embedded_db)
    assert tuple(instances) == SETS
    without = calibrate(tiny_demo, embedded_db, linker=linker, drop=KB_FEATURES, instances=instances)
    weights = without.calibration.weights
    assert len(weights) == len(FEATURES) + 1
    assert all(weights[1 + FEATURES.index(f)] == 0.0 for f in KB_FEATURES)
    assert without.calibration.provenance["without"] == list(KB_FEATURES)
    assert list(without.scores) == ["fit half (all sets)", *(f"held-out half, {name}" for name in SETS)]
    fit_decisions = sum(len([i for i in fit if i.method == "combined"]) for fit, _ in instances.values())
    assert without.scores["fit half (all sets)"].mentions == fit_decisions
    assert sum(s.should_be_nil for s in without.scores.values()) > 0  # entity-removed mentions were scored
    assert all(0.0 <= s.accuracy <= 1.0 for s in without.scores.values())
    assert without.common_words["common words"] == 18 and without.common_words["places"] == 19
    assert 0.05 <= without.calibration.threshold <= 0.95
    with_kb = calibrate(tiny_demo, embedded_db, linker=linker, instances=instances)
    assert with_kb.calibration.weights != weights
    with pytest.raises(ValueError, match="unknown features"):
        calibrate(tiny_demo, embedded_db, linker=linker, drop=("no_such_feature",), instances=instances)


def _report(kept: dict[str, float | None], recall: float, unlinked: int = 18, linked: int = 19) -> CalibrationReport:
    report = CalibrationReport(Calibration((0.0,) * (len(FEATURES) + 1)))
    report.scores["fit half (all sets)"] = NilScores(100, 50, 0, None, 0.0, 0.5, 0.5)  # the fit half never counts
    for name, k in kept.items():
        report.scores[f"held-out half, {name}"] = NilScores(100, 50, 25, 1.0, recall, 0.75, k)
    report.common_words = {"common words": 18, "common words unlinked": unlinked, "places": 19, "places linked": linked}
    return report


def test_the_default_rule_keeps_right_links_first_then_finds_nil():
    good = _report({"template": 0.95, "no country": None}, recall=0.1)
    better = _report({"template": 0.91, "no country": 0.9}, recall=0.4)
    greedy = _report({"template": 0.85, "no country": 1.0}, recall=0.9)
    assert meets_default_rule(good) == [] and meets_default_rule(better) == []
    assert meets_default_rule(greedy) == ["held-out half, template: 85.0% of right ambiguous links kept"]
    assert held_out_recall(better) == pytest.approx(0.4)
    assert choose_default({"good": good, "better": better, "greedy": greedy}) == ("better", [])
    # none meets the rule: the one that fails fewest rules, and what it fails
    no_place = _report({"template": 0.95}, recall=0.2, linked=18)
    chosen = choose_default({"greedy": greedy, "no place": no_place, "worst": _report({"t": 0.5}, 0.9, unlinked=17)})
    assert chosen == ("greedy", ["held-out half, template: 85.0% of right ambiguous links kept"])  # then recall
    assert meets_default_rule(no_place) == ["places linked 18/19"]
