"""Answer sets scored with the official LM-KBC evaluation's rules (lm-kbc/dataset2024 evaluate.py), one
test per empty-set case and the ordinary ones."""

from __future__ import annotations

import pytest

from mluke.object_sets import macro_set_scores, set_scores


def test_both_empty_is_perfect():
    assert set_scores([], []) == (1.0, 1.0, 1.0)


def test_empty_answer_to_a_subject_with_objects_has_precision_one_recall_zero():
    assert set_scores([], ["Q1", "Q2"]) == (1.0, 0.0, 0.0)


def test_any_answer_to_a_subject_without_objects_has_precision_zero_recall_one():
    assert set_scores(["Q1"], []) == (0.0, 1.0, 0.0)


def test_non_empty_sets_and_duplicates():
    p, r, f = set_scores(["Q1", "Q3", "Q3"], ["Q1", "Q2", "Q2", "Q4"])  # duplicates count once, as LM-KBC 2024's set()
    assert (p, r) == (0.5, pytest.approx(1 / 3)) and f == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert set_scores(["Q9"], ["Q1"]) == (0.0, 0.0, 0.0)  # no hit: F1 0, not a division by zero
    assert set_scores(["Q1", "Q2"], ["Q2", "Q1"]) == (1.0, 1.0, 1.0)


def test_macro_average_over_subjects():
    got = macro_set_scores([([], []), ([], ["Q1"]), (["Q1"], []), (["Q1", "Q2"], ["Q1"])])
    assert got == pytest.approx(
        {"precision": (1 + 1 + 0 + 0.5) / 4, "recall": (1 + 0 + 1 + 1) / 4, "F1": (1 + 0 + 0 + 2 / 3) / 4}
    )
    assert macro_set_scores([]) == {"precision": None, "recall": None, "F1": None}
