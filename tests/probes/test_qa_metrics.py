"""Extractive-QA exact match / F1 under the official scorers' rules (SQuAD v1.1's evaluate-v1.1.py, MLQA's
mlqa_evaluation_v1.py), on cases worked out by hand from those rules."""

from __future__ import annotations

import pytest

from kb.errors import OptionError
from probes.transfer.metrics.qa import (
    ARTICLES,
    SCORERS,
    answer_tokens,
    check_scorer,
    exact_match,
    f1_score,
    gxlt_matrix,
    normalize_answer,
    qa_scores,
)

# -- SQuAD v1.1 rules (SQuAD, XQuAD in every language) ------------------------------------------------------------


def test_squad_removes_only_ascii_punctuation():
    # issue 26: curly quotes are not in string.punctuation, so they stay glued to the words.
    # pred -> "“gone with wind”" -> [“gone, with, wind”]; gold -> [gone, with, wind]
    # EM 0; common = {with} -> P 1/3, R 1/3, F1 1/3
    assert normalize_answer("“Gone with the Wind”", "en") == "“gone with wind”"
    assert exact_match("“Gone with the Wind”", ["Gone with the Wind"], "en", "squad") == 0.0
    assert f1_score("“Gone with the Wind”", ["Gone with the Wind"], "en", "squad") == pytest.approx(1 / 3)
    # "…" (U+2026) is not ASCII either: [wait…] vs [wait] share nothing
    assert exact_match("Wait…", ["Wait"], "en", "squad") == 0.0
    assert f1_score("Wait…", ["Wait"], "en", "squad") == 0.0
    # ASCII punctuation goes, "$" included
    assert normalize_answer('  The "$100,000" dollars! ', "en") == "100000 dollars"
    assert exact_match("Wait...", ["wait"], "en", "squad") == 1.0


def test_squad_articles_are_english_only_whole_words_in_every_language():
    assert normalize_answer("Theatre of an anthem", "en") == "theatre of anthem"
    # the language is not used: "the" goes in German text, "die" / "la" stay
    assert normalize_answer("The Beatles, die Band", "de") == "beatles die band"
    assert exact_match("La Casa Blanca", ["casa blanca"], "es", "squad") == 0.0
    # [la, casa, blanca] vs [casa, blanca]: P 2/3, R 1 -> F1 0.8
    assert f1_score("La Casa Blanca", ["casa blanca"], "es", "squad") == pytest.approx(0.8)
    # \b is Unicode-aware: "thé" is one word, so its "the" stays
    assert normalize_answer("thé the", "fr") == "thé"


def test_squad_in_other_scripts_keeps_non_ascii_punctuation_and_does_not_segment():
    assert exact_match("«Москва»", ["Москва"], "ru", "squad") == 0.0
    assert exact_match("भारत।", ["भारत"], "hi", "squad") == 0.0
    assert exact_match("الكتاب", ["كتاب"], "ar", "squad") == 0.0
    # no character segmentation: a Chinese or Thai answer is one whitespace token
    assert answer_tokens("北京市", "zh", "squad") == ["北京市"]
    assert f1_score("北京市", ["北京"], "zh", "squad") == 0.0
    assert f1_score("ポケット", ["ポケットモンスター"], "ja", "squad") == 0.0


def test_squad_partial_f1_and_repeated_tokens():
    # [big, red, house] vs [red, house, in, town]: common 2, P 2/3, R 1/2 -> F1 4/7
    assert answer_tokens("the big red house", "en") == ["big", "red", "house"]
    assert f1_score("the big red house", ["red house in town"], "en") == pytest.approx(4 / 7)
    # [new, new, york] vs [new, york]: Counter overlap new:1 + york:1 = 2, P 2/3, R 1 -> F1 0.8
    assert f1_score("new new york", ["New York"], "en") == pytest.approx(0.8)


# -- MLQA rules (MLQA, G-XLT; per context language) ---------------------------------------------------------------


def test_mlqa_removes_unicode_punctuation():
    assert exact_match("“Gone with the Wind”", ["Gone with the Wind"], "en", "mlqa") == 1.0
    assert exact_match("Wait…", ["Wait"], "en", "mlqa") == 1.0
    # "$" (category Sc) goes too, as string.punctuation is part of MLQA's set
    assert normalize_answer("“$100,000” dollars", "en", "mlqa") == "100000 dollars"
    # U+0964 DEVANAGARI DANDA (Po); Hindi has no articles
    assert normalize_answer("नई दिल्ली।", "hi", "mlqa") == "नई दिल्ली"
    assert exact_match("भारत।", ["भारत"], "hi", "mlqa") == 1.0


def test_mlqa_articles_per_language():
    assert normalize_answer("Las Ramblas y el puerto", "es", "mlqa") == "ramblas y puerto"
    assert exact_match("La Casa Blanca", ["casa blanca"], "es", "mlqa") == 1.0
    assert normalize_answer("Die Mauer des Kalten Krieges", "de", "mlqa") == "mauer kalten krieges"
    assert exact_match("einen Bundestag", ["Bundestag"], "de", "mlqa") == 1.0
    assert normalize_answer("những cuốn sách", "vi", "mlqa") == "cuốn sách"
    assert normalize_answer("làm việc", "vi", "mlqa") == "làm việc"  # "là" only as a whole word
    # each language's own list: "the" is no Spanish article, "la" no English one
    assert normalize_answer("the casa", "es", "mlqa") == "the casa"
    assert normalize_answer("la casa", "en", "mlqa") == "la casa"
    assert set(ARTICLES) == {"en", "es", "de", "vi", "ar"}


def test_mlqa_arabic_follows_the_official_regex():
    # issue 26: the script replaces every "ال" by a space, also inside words: "العالم" -> " ع م"
    # pred "بكأس العالم 2018" -> [بكأس, ع, م, 2018]; gold "كأس العالم" -> [كأس, ع, م]
    # common {ع, م} = 2: P 2/4, R 2/3 -> F1 = 2 * (1/2 * 2/3) / (1/2 + 2/3) = 4/7 = .571
    assert normalize_answer("العالم", "ar", "mlqa") == "ع م"
    assert answer_tokens("بكأس العالم 2018", "ar", "mlqa") == ["بكأس", "ع", "م", "2018"]
    assert f1_score("بكأس العالم 2018", ["كأس العالم"], "ar", "mlqa") == pytest.approx(4 / 7)
    assert exact_match("بكأس العالم 2018", ["كأس العالم"], "ar", "mlqa") == 0.0
    # "مال" (money) loses its "ال" too; Arabic comma and question mark are punctuation
    assert normalize_answer("مال", "ar", "mlqa") == "م"
    assert normalize_answer("القاهرة، مصر؟", "ar", "mlqa") == "قاهرة مصر"


def test_mlqa_fixed_removes_the_arabic_article_only_at_token_start():
    # [بكأس, عالم, 2018] vs [كأس, عالم]: common 1, P 1/3, R 1/2 -> F1 0.4
    assert answer_tokens("بكأس العالم 2018", "ar", "mlqa-fixed") == ["بكأس", "عالم", "2018"]
    assert f1_score("بكأس العالم 2018", ["كأس العالم"], "ar", "mlqa-fixed") == pytest.approx(0.4)
    assert normalize_answer("مال", "ar", "mlqa-fixed") == "مال"
    assert exact_match("الكتاب", ["كتاب"], "ar", "mlqa-fixed") == 1.0
    # the other languages are scored as by "mlqa"
    assert normalize_answer("Die Mauer", "de", "mlqa-fixed") == "mauer"
    assert answer_tokens("北京市", "zh", "mlqa-fixed") == ["北", "京", "市"]


def test_mlqa_chinese_mixed_segmentation_splits_only_u4e00_to_u9fa5():
    assert answer_tokens("北京市", "zh", "mlqa") == ["北", "京", "市"]
    # [北, 京, 市] vs [北, 京]: P 2/3, R 1 -> F1 0.8
    assert f1_score("北京市", ["北京"], "zh", "mlqa") == pytest.approx(0.8)
    assert answer_tokens("2008年奥运会", "zh", "mlqa") == ["2008", "年", "奥", "运", "会"]
    assert answer_tokens("在 New York 举行。", "zh", "mlqa") == ["在", "new", "york", "举", "行"]
    assert exact_match("北京 市", ["北京市"], "zh", "mlqa") == 1.0
    # issue 26: kana are outside the range, so "ポケット" and "ポケットモンスター" are one token each: F1 0
    assert answer_tokens("ポケットモンスター", "zh", "mlqa") == ["ポケットモンスター"]
    assert f1_score("ポケット", ["ポケットモンスター"], "zh", "mlqa") == 0.0
    assert answer_tokens("東京タワー", "zh", "mlqa") == ["東", "京", "タワー"]
    # CJK Extension A (U+3400...) and U+9FA6 and later are not split either
    assert answer_tokens("㐀㐁", "zh", "mlqa") == ["㐀㐁"]
    assert answer_tokens("\u9fa5\u9fa6\u9fa7", "zh", "mlqa") == ["\u9fa5", "\u9fa6\u9fa7"]
    # region subtags are reduced to the language
    assert answer_tokens("北京", "zh-Hans", "mlqa") == ["北", "京"]


def test_mlqa_refuses_languages_its_script_does_not_score():
    for scorer in ("mlqa", "mlqa-fixed"):
        with pytest.raises(OptionError, match="'ja'.*use scorer 'squad'"):
            normalize_answer("ポケット", "ja", scorer)  # type: ignore[arg-type]
        with pytest.raises(OptionError, match="'th'"):
            qa_scores({"q": "x"}, {"q": ["x"]}, "th", scorer)  # type: ignore[arg-type]
    assert normalize_answer("ポケット", "ja", "squad") == "ポケット"
    with pytest.raises(OptionError, match="unknown QA scorer 'xquad'.*squad, mlqa, mlqa-fixed"):
        check_scorer("xquad")
    assert SCORERS == ("squad", "mlqa", "mlqa-fixed")


# -- per question ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scorer", SCORERS)
def test_max_over_gold_answers(scorer):
    golds = ["blue car", "house in town", "a red house"]
    assert exact_match("The red house", golds, "en", scorer) == 1.0
    assert f1_score("The red house", golds, "en", scorer) == 1.0
    # best is "house in town": [big, house] vs [house, in, town] -> P 1/2, R 1/3 -> F1 0.4
    assert f1_score("big house", ["blue car", "house in town"], "en", scorer) == pytest.approx(0.4)


@pytest.mark.parametrize("scorer", SCORERS)
def test_empty_answers(scorer):
    assert exact_match("", ["Paris"], "en", scorer) == 0.0
    assert f1_score("", ["Paris"], "en", scorer) == 0.0
    # both normalise to nothing: EM compares equal empty strings (1), F1 shares no token (0), as in both scripts
    assert exact_match("an", ["the"], "en", scorer) == 1.0
    assert f1_score("an", ["the"], "en", scorer) == 0.0


def test_gold_answers_must_be_a_non_empty_list():
    with pytest.raises(OptionError):
        exact_match("Paris", [], "en")
    with pytest.raises(OptionError):
        f1_score("Paris", "Paris", "en")


# -- data set ----------------------------------------------------------------------------------------------------


def test_qa_scores_means_and_missing():
    golds = {"q1": ["Paris"], "q2": ["Berlin"], "q3": ["red house in town"], "q4": ["Gone with the Wind"]}
    predictions = {"q1": "paris.", "q3": "the big red house", "q4": "“Gone with the Wind”", "not-a-question": "Berlin"}
    squad = qa_scores(predictions, golds, "en")
    assert squad["questions"] == 4 and squad["missing"] == 1 and squad["scorer"] == "squad"
    assert squad["exact_match"] == pytest.approx(1 / 4)
    assert squad["f1"] == pytest.approx((1 + 0 + 4 / 7 + 1 / 3) / 4)
    mlqa = qa_scores(predictions, golds, "en", "mlqa")
    assert mlqa["exact_match"] == pytest.approx(2 / 4) and mlqa["f1"] == pytest.approx((1 + 0 + 4 / 7 + 1) / 4)


def test_qa_scores_needs_golds():
    with pytest.raises(OptionError):
        qa_scores({"q1": "x"}, {}, "en")


def test_gxlt_matrix():
    scores = {
        ("en", "en"): 0.8,
        ("en", "de"): 0.5,
        ("de", "en"): 0.6,
        ("de", "de"): 0.7,
        ("ar", "en"): 0.4,
        ("ar", "ar"): 0.55555,
        ("zh", "zh"): 0.9,
    }  # zh is not in langs: ignored
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
