"""Fitting the linker's confidence calibration on the tiny demo, with and without kb coherence."""

import pytest

from mluke.confidence import FEATURES, KB_FEATURES
from probes.linking_calibration import calibrate


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    from mluke.linker import Linker

    return Linker(tiny_demo, embedded_db, languages=["de", "en", "es", "fr", "ja"])


def test_calibrate_with_and_without_kb_coherence(tiny_demo, embedded_db, linker):
    without = calibrate(tiny_demo, embedded_db, linker=linker, drop=KB_FEATURES)
    weights = without.calibration.weights
    assert len(weights) == len(FEATURES) + 1
    assert all(weights[1 + FEATURES.index(f)] == 0.0 for f in KB_FEATURES)
    assert without.calibration.provenance["without"] == list(KB_FEATURES)
    assert set(without.scores) == {
        "fit half (template + free wording)",
        "held-out half, template wording",
        "held-out half, free wording",
    }
    assert sum(s.should_be_nil for s in without.scores.values()) > 0  # entity-removed mentions were scored
    assert all(0.0 <= s.accuracy <= 1.0 for s in without.scores.values())
    assert without.common_words["common words"] == 18 and without.common_words["places"] == 19
    assert 0.05 <= without.calibration.threshold <= 0.95
    with pytest.raises(ValueError, match="unknown features"):
        calibrate(tiny_demo, embedded_db, linker=linker, drop=("no_such_feature",))
