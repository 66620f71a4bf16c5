"""NER and relation-extraction scores on small cases computed by hand."""

from __future__ import annotations

import pytest

from kb.errors import OptionError
from probes.transfer.metrics.ner_re import ner_scores, re_scores
from probes.transfer.readers.ner import NerSentence

GOLD = [
    NerSentence(("Angela", "Merkel", "visited", "Paris", "."), ((0, 2, "PER"), (3, 4, "LOC"))),
    NerSentence(("The", "United", "Nations", "met", "in", "New", "York"), ((1, 3, "ORG"), (5, 7, "LOC"))),
]


def test_ner_perfect():
    scores = ner_scores(GOLD, [s.spans for s in GOLD])
    assert (scores["precision"], scores["recall"], scores["f1"], scores["support"]) == (1.0, 1.0, 1.0, 4)
    assert scores["per_type"]["LOC"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}


def test_ner_partial_match_is_wrong_in_strict_mode():
    # "Merkel" alone and "York" alone: the right type but not the whole entity
    predicted = [[(1, 2, "PER"), (3, 4, "LOC")], [(1, 3, "ORG"), (6, 7, "LOC")]]
    scores = ner_scores(GOLD, predicted)
    assert scores["precision"] == pytest.approx(2 / 4) and scores["recall"] == pytest.approx(2 / 4)
    assert scores["f1"] == pytest.approx(0.5)
    assert scores["per_type"]["PER"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert scores["per_type"]["LOC"]["f1"] == pytest.approx(0.5)


def test_ner_wrong_type_missed_and_spurious():
    # PER right; Paris called ORG; nothing for the UN; New York right; an extra MISC
    predicted = [[(0, 2, "PER"), (3, 4, "ORG")], [(0, 1, "MISC"), (5, 7, "LOC")]]
    scores = ner_scores(GOLD, predicted)
    precision, recall = 2 / 4, 2 / 4
    assert scores["precision"] == pytest.approx(precision) and scores["recall"] == pytest.approx(recall)
    assert scores["support"] == 4
    per_type = scores["per_type"]
    assert sorted(per_type) == ["LOC", "MISC", "ORG", "PER"]  # MISC only predicted: still listed
    assert per_type["MISC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert per_type["LOC"]["precision"] == 1.0 and per_type["LOC"]["recall"] == 0.5
    assert per_type["ORG"]["support"] == 1 and per_type["ORG"]["f1"] == 0.0
    assert all(type(v) is float for v in (scores["precision"], scores["f1"], per_type["LOC"]["f1"]))


def test_ner_adjacent_entities_are_two():
    gold = [NerSentence(("Madrid", "Barcelona"), ((0, 1, "LOC"), (1, 2, "LOC")))]
    assert ner_scores(gold, [[(0, 2, "LOC")]])["f1"] == 0.0
    assert ner_scores(gold, [[(1, 2, "LOC"), (0, 1, "LOC")]])["f1"] == 1.0  # order of spans does not matter


def test_ner_edge_cases():
    empty = [NerSentence(("a", "b"), ())]
    assert ner_scores(empty, [[]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "per_type": {}}
    assert ner_scores(empty, [[(0, 1, "PER")]])["precision"] == 0.0
    with pytest.raises(OptionError, match="2 gold sentences but 1 predictions"):
        ner_scores(GOLD, [[]])
    with pytest.raises(OptionError, match="outside a sentence of 5 words"):
        ner_scores(GOLD, [[(4, 6, "PER")], []])


EMP, FOUND, MEMBERS = "per:employee_of", "org:founded_by", "org:members"


def test_re_hand_computed():
    gold = [f"{EMP}(e1,e2)", f"{EMP}(e1,e2)", f"{FOUND}(e2,e1)", "no_relation", "no_relation", f"{FOUND}(e1,e2)"]
    pred = [f"{EMP}(e1,e2)", f"{EMP}(e2,e1)", f"{FOUND}(e2,e1)", f"{MEMBERS}(e1,e2)", "no_relation", "no_relation"]
    # EMP: 1 right, 1 wrong direction (a false positive and a false negative) -> P 1/2, R 1/2, F1 1/2
    # FOUND: 1 right, 1 missed (predicted no_relation)                          -> P 1,   R 1/2, F1 2/3
    # MEMBERS: predicted for a no_relation pair, never gold                     -> P 0,   R 0,   F1 0
    scores = re_scores(gold, pred)
    assert scores["types"] == [FOUND, MEMBERS, EMP]
    assert scores["per_type"][EMP] == {
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
        "support": 2,
        "predicted": 2,
        "correct": 1,
    }
    assert scores["per_type"][FOUND]["f1"] == pytest.approx(2 / 3)
    assert scores["per_type"][MEMBERS] == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "support": 0,
        "predicted": 1,
        "correct": 0,
    }
    assert "no_relation" not in scores["per_type"]
    assert scores["macro_f1"] == pytest.approx((0.5 + 2 / 3 + 0.0) / 3)  # MEMBERS counts: seen in predictions
    assert scores["micro_f1"] == pytest.approx(0.5)  # 2 right, 2 false positives, 2 false negatives
    assert scores["accuracy"] == pytest.approx(3 / 6)  # no_relation == no_relation counts here only


def test_re_direction_matters():
    gold = [f"{EMP}(e1,e2)"]
    assert re_scores(gold, [f"{EMP}(e1,e2)"])["macro_f1"] == 1.0
    wrong = re_scores(gold, [f"{EMP}(e2,e1)"])
    assert wrong["macro_f1"] == 0.0 and wrong["accuracy"] == 0.0 and wrong["types"] == [EMP]


def test_re_no_relation_is_not_averaged():
    gold = ["no_relation"] * 9 + [f"{EMP}(e1,e2)"]
    pred = ["no_relation"] * 9 + [f"{EMP}(e1,e2)"]
    scores = re_scores(gold, pred)
    assert scores["types"] == [EMP] and scores["macro_f1"] == 1.0  # not (1.0 + 1.0) / 2 with a no_relation class
    spurious = re_scores(gold, [f"{EMP}(e1,e2)", *pred[1:]])  # one no_relation predicted as EMP
    assert spurious["per_type"][EMP]["precision"] == 0.5 and spurious["macro_f1"] == pytest.approx(2 / 3)
    assert re_scores(["no_relation"], ["no_relation"]) == {
        "macro_f1": 0.0,
        "micro_f1": 0.0,
        "accuracy": 1.0,
        "per_type": {},
        "types": [],
    }


def test_re_bad_input():
    with pytest.raises(OptionError, match="2 gold labels but 1 predictions"):
        re_scores(["no_relation", "no_relation"], ["no_relation"])
    with pytest.raises(OptionError, match="not a relation label: 'Other'"):
        re_scores(["Other"], ["no_relation"])
    assert re_scores([], [])["accuracy"] == 0.0
