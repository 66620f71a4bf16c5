"""LM-KBC 2024: the reader of its JSON lines and the challenge's scoring rules, worked by hand."""

import json

import pytest

from kb.errors import InputFormatError
from probes.lmkbc import ALL, LmkbcRow, eval_lmkbc, read_lmkbc, rows_from_probe, score_lmkbc, write_lmkbc

# Lines in the layout of lm-kbc/dataset2024's data/val.jsonl (an empty object list is a subject with none)
GOLD = [
    {
        "SubjectEntityID": "Q183",
        "SubjectEntity": "Germany",
        "Relation": "countryLandBordersCountry",
        "ObjectEntitiesID": ["Q31", "Q142", "Q39"],
        "ObjectEntities": ["Belgium", "France", "Switzerland"],
    },
    {
        "SubjectEntityID": "Q408",
        "SubjectEntity": "Australia",
        "Relation": "countryLandBordersCountry",
        "ObjectEntitiesID": [],
        "ObjectEntities": [],
    },
    {
        "SubjectEntityID": "Q95",
        "SubjectEntity": "Google",
        "Relation": "companyTradesAtStockExchange",
        "ObjectEntitiesID": ["Q82059"],
        "ObjectEntities": ["Nasdaq"],
    },
]
PREDICTED = [
    {"SubjectEntity": "Germany", "Relation": "countryLandBordersCountry", "ObjectEntitiesID": ["Q31", "Q142", "Q16"]},
    {"SubjectEntity": "Australia", "Relation": "countryLandBordersCountry", "ObjectEntitiesID": ["Q664"]},
    {"SubjectEntity": "Google", "Relation": "companyTradesAtStockExchange", "ObjectEntitiesID": []},
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_reads_the_challenge_layout_and_skips_bad_lines(tmp_path):
    path = tmp_path / "val.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in GOLD) + "{not json\n" + json.dumps({"SubjectEntity": "x"}) + "\n",
        encoding="utf-8",
    )
    data = read_lmkbc(path)
    assert len(data) == 3 and data.relations == ("companyTradesAtStockExchange", "countryLandBordersCountry")
    assert data.rows[0] == LmkbcRow(
        "Q183", "Germany", "countryLandBordersCountry", ("Q31", "Q142", "Q39"), ("Belgium", "France", "Switzerland")
    )
    assert data.rows[1].object_ids == ()
    assert sum(data.skipped.values()) == 2 and any(":4:" in e for e in data.examples_skipped)
    again = read_lmkbc(write_lmkbc(data.rows, tmp_path / "again.jsonl"))
    assert again.rows == data.rows
    with pytest.raises(InputFormatError, match="no such file"):
        read_lmkbc(tmp_path / "nowhere.jsonl")


def test_scores_follow_the_challenge_rules(tmp_path):
    scores = eval_lmkbc(_jsonl(tmp_path / "gold.jsonl", GOLD), _jsonl(tmp_path / "pred.jsonl", PREDICTED))
    by = {(p.subject, p.relation): p for p in scores.pairs}
    germany = by[("Germany", "countryLandBordersCountry")]
    assert (germany.precision, germany.recall) == pytest.approx((2 / 3, 2 / 3)) and germany.true_positives == 2
    australia = by[("Australia", "countryLandBordersCountry")]  # gold empty: recall 1, any answer precision 0
    assert (australia.precision, australia.recall, australia.f1) == (0.0, 1.0, 0.0)
    google = by[("Google", "companyTradesAtStockExchange")]  # nothing predicted: precision 1, recall 0
    assert (google.precision, google.recall, google.f1) == (1.0, 0.0, 0.0)
    borders = scores.relations["countryLandBordersCountry"]
    assert borders["macro-p"] == pytest.approx((2 / 3 + 0) / 2) and borders["macro-r"] == pytest.approx((2 / 3 + 1) / 2)
    # micro: tp 2, predicted 4, gold 3
    assert (borders["micro-p"], borders["micro-r"]) == pytest.approx((2 / 4, 2 / 3))
    every = scores.relations[ALL]  # macro over all three pairs, not over the two relations
    assert every["macro-f1"] == pytest.approx((2 / 3 + 0 + 0) / 3) == scores.macro_f1
    assert every["empty"] == 1 and every["pairs"] == 3
    stock = scores.relations["companyTradesAtStockExchange"]  # no prediction at all: micro precision 1.0
    assert (stock["micro-p"], stock["micro-r"], stock["micro-f1"]) == (1.0, 0.0, 0.0)


def test_a_gold_pair_without_prediction_is_named():
    gold = [LmkbcRow("Q183", "Germany", "countryLandBordersCountry", ("Q31",))]
    with pytest.raises(InputFormatError, match="'Germany' countryLandBordersCountry"):
        score_lmkbc(gold, [])


def test_rows_from_a_thresholded_probe_result_carry_qids():
    from types import SimpleNamespace

    from mluke.results import Prediction, SubjectResult

    france = Prediction("Q142", "France", -0.1, "entity", True)
    mode = SimpleNamespace(
        rows=[
            SubjectResult("Q183", "Germany", ["Q142"], ["France"], [france], 1),
            SubjectResult("Q408", "Australia", [], [], [], None, gold_known=True),
        ]
    )
    rows = rows_from_probe(SimpleNamespace(results=[mode]), "countryLandBordersCountry")
    assert [(r.subject_id, r.subject, r.object_ids) for r in rows] == [
        ("Q183", "Germany", ("Q142",)),
        ("Q408", "Australia", ()),
    ]
