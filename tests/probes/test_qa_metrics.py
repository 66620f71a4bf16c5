"""Extractive-QA exact match / F1 with MLQA's per-language normalisation, on small cases worked out by hand."""

from __future__ import annotations

import pytest

from kb.errors import OptionError
from probes.transfer.qa_metrics import (ARTICLES, answer_tokens, exact_match, f1_score, gxlt_matrix,
                                        normalize_answer, qa_scores)


# -- normalisation -----------------------------------------------------------------------------------------------

def test_english_articles_and_punctuation():
    assert normalize_answer("The Eiffel Tower!", "en") == "eiffel tower"
    assert exact_match("The Eiffel Tower!", ["eiffel tower"], "en") == 1.0
    # "$" is in string.punctuation (category Sc), "“”" are Unicode punctuation (Pi/Pf)
    assert normalize_answer("  “$100,000”  dollars ", "en") == "100000 dollars"
    # articles go only as whole words
    assert normalize_answer("Theatre of an anthem", "en") == "theatre of anthem"


def test_english_partial_f1():
    # pred  "the big red house" -> [big, red, house]  (3 tokens, "the" removed)
    # gold  "red house in town" -> [red, house, in, town]  (4 tokens)
    # common = {red, house} = 2; precision 2/3, recall 2/4; F1 = 2*(2/3)*(1/2) / (2/3 + 1/2) = 4/7
    assert answer_tokens("the big red house", "en") == ["big", "red", "house"]
    assert f1_score("the big red house", ["red house in town"], "en") == pytest.approx(4 / 7)
    assert exact_match("the big red house", ["red house in town"], "en") == 0.0


def test_f1_counts_repeated_tokens_as_a_multiset():
    # pred [new, new, york], gold [new, york]: common = min counts = new:1 + york:1 = 2
    # precision 2/3, recall 1 -> F1 = 0.8
    assert f1_score("new new york", ["New York"], "en") == pytest.approx(0.8)


def test_spanish_and_german_articles_removed():
    assert normalize_answer("Las Ramblas y el puerto", "es") == "ramblas y puerto"
    assert exact_match("La Casa Blanca", ["casa blanca"], "es") == 1.0
    assert normalize_answer("Die Mauer des Kalten Krieges", "de") == "mauer kalten krieges"
    assert exact_match("dem Bundestag", ["Bundestag"], "de") == 1.0
    # English articles are not Spanish ones and vice versa
    assert normalize_answer("the casa", "es") == "the casa"
    assert normalize_answer("la casa", "en") == "la casa"


def test_french_articles_are_kept_as_in_mlqa():
    # MLQA has no French: no article list, so "la" counts as a token
    assert "fr" not in ARTICLES
    assert normalize_answer("La tour Eiffel", "fr") == "la tour eiffel"
    assert exact_match("la tour Eiffel", ["tour Eiffel"], "fr") == 0.0
    # [la, tour, eiffel] vs [tour, eiffel]: precision 2/3, recall 1 -> F1 0.8
    assert f1_score("la tour Eiffel", ["tour Eiffel"], "fr") == pytest.approx(0.8)


def test_arabic_definite_article_and_punctuation():
    assert exact_match("الكتاب", ["كتاب"], "ar") == 1.0
    assert normalize_answer("البيت الكبير", "ar") == "بيت كبير"
    # "ال" inside a word stays ("مال", money, is not "م")
    assert normalize_answer("مال", "ar") == "مال"
    # Arabic comma (U+060C) and question mark (U+061F) are punctuation
    assert normalize_answer("القاهرة، مصر؟", "ar") == "قاهرة مصر"


def test_chinese_mixed_segmentation():
    assert answer_tokens("北京市", "zh") == ["北", "京", "市"]
    # pred [北, 京, 市] vs gold [北, 京]: precision 2/3, recall 1 -> F1 = 2*(2/3*1)/(2/3+1) = 0.8
    assert f1_score("北京市", ["北京"], "zh") == pytest.approx(0.8)
    assert answer_tokens("2008年奥运会", "zh") == ["2008", "年", "奥", "运", "会"]
    assert answer_tokens("在 New York 举行。", "zh") == ["在", "new", "york", "举", "行"]
    # spacing between characters does not matter for EM
    assert normalize_answer("北京 市", "zh") == normalize_answer("北京市", "zh") == "北 京 市"
    assert exact_match("北京 市", ["北京市"], "zh") == 1.0
    # region subtags are reduced to the language
    assert answer_tokens("北京", "zh-Hans") == ["北", "京"]
    # other languages split on whitespace only
    assert answer_tokens("北京市", "en") == ["北京市"]


def test_japanese_and_thai_are_segmented_by_character():
    assert answer_tokens("東京タワー", "ja") == ["東", "京", "タ", "ワ", "ー"]
    assert f1_score("東京タワー", ["東京"], "ja") == pytest.approx(2 * (2 / 5) / (2 / 5 + 1))
    assert answer_tokens("กทม 2020", "th") == ["ก", "ท", "ม", "2020"]


def test_hindi_danda_and_vietnamese_article():
    # U+0964 DEVANAGARI DANDA has category Po
    assert normalize_answer("नई दिल्ली।", "hi") == "नई दिल्ली"
    assert exact_match("भारत।", ["भारत"], "hi") == 1.0
    assert normalize_answer("những cuốn sách", "vi") == "cuốn sách"
    # "là" only as a whole word: "làm" stays
    assert normalize_answer("làm việc", "vi") == "làm việc"


def test_languages_without_rules_only_lowercase_and_strip_punctuation():
    assert normalize_answer("Der Spiegel, «Le Monde»", "xx") == "der spiegel le monde"


# -- per question ------------------------------------------------------------------------------------------------

def test_max_over_gold_answers():
    golds = ["blue car", "house in town", "a red house"]
    assert exact_match("The red house", golds, "en") == 1.0
    assert f1_score("The red house", golds, "en") == 1.0
    # best is "house in town": [big, house] vs [house, in, town] -> P 1/2, R 1/3 -> F1 0.4
    assert f1_score("big house", ["blue car", "house in town"], "en") == pytest.approx(0.4)


def test_empty_prediction_scores_zero():
    assert exact_match("", ["Paris"], "en") == 0.0
    assert f1_score("", ["Paris"], "en") == 0.0
    # a gold that normalises to nothing: EM counts the empty strings as equal, F1 shares no token (MLQA/SQuAD)
    assert exact_match("an", ["the"], "en") == 1.0
    assert f1_score("an", ["the"], "en") == 0.0


def test_gold_answers_must_be_a_non_empty_list():
    with pytest.raises(OptionError):
        exact_match("Paris", [], "en")
    with pytest.raises(OptionError):
        f1_score("Paris", "Paris", "en")


# -- data set ----------------------------------------------------------------------------------------------------

def test_qa_scores_means_and_missing():
    golds = {"q1": ["Paris"], "q2": ["Berlin"], "q3": ["red house in town"]}
    predictions = {"q1": "paris.", "q3": "the big red house", "not-a-question": "Berlin"}
    scores = qa_scores(predictions, golds, "en")
    assert scores["questions"] == 3 and scores["missing"] == 1
    assert scores["exact_match"] == pytest.approx(1 / 3)
    assert scores["f1"] == pytest.approx((1 + 0 + 4 / 7) / 3)


def test_qa_scores_needs_golds():
    with pytest.raises(OptionError):
        qa_scores({"q1": "x"}, {}, "en")


def test_gxlt_matrix():
    scores = {("en", "en"): 0.8, ("en", "de"): 0.5, ("de", "en"): 0.6, ("de", "de"): 0.7,
              ("ar", "en"): 0.4, ("ar", "ar"): 0.55555, ("zh", "zh"): 0.9}  # zh is not in langs: ignored
    columns, rows = gxlt_matrix(scores, ["en", "de", "ar"])
    assert columns == ["context \\ question", "en", "de", "ar"]
    assert [row[0] for row in rows] == ["en", "de", "ar", "average"]
    assert all(len(row) == len(columns) for row in rows)
    assert rows[0] == ["en", 80.0, 50.0, "-"]
    assert rows[2] == ["ar", 40.0, "-", 55.6]
    # column means over the available cells: en (80+60+40)/3, de (50+70)/2, ar 55.555
    assert rows[3] == ["average", 60.0, 60.0, 55.6]
    _, rows = gxlt_matrix({}, ["en"])
    assert rows == [["en", "-"], ["average", "-"]]
