import pytest

from kb import TemplateError, parse_template
from kb.db.titles import normalize_title
from kb.errors import UnknownLanguageError
from kb.languages import check_language, check_languages


def test_valid_template_in_either_order():
    t = parse_template("The capital of [X] is [Y].")
    assert t.x_first
    t2 = parse_template("[Y]は[X]の首都です。")
    assert not t2.x_first
    assert t2.fill("日本", "東京") == "東京は日本の首都です。"


def test_fill_is_single_pass():
    t = parse_template("[X] borders [Y].")
    assert t.fill("A [Y] B", "C") == "A [Y] B borders C."
    assert t.fill(x="France") == "France borders [Y]."


@pytest.mark.parametrize(
    "text, message",
    [
        ("The capital of [X] is.", r"\[Y\] missing"),
        ("[X] and [Y] and [Y]", r"\[Y\] appears 2 times"),
        ("[X] [X] [Y]", r"\[X\] appears 2 times"),
        ("[X] is in [Z].", r"unknown placeholder\(s\) \[Z\]"),
        ("[x] is in [y].", r"unknown placeholder"),
        ("", "empty template"),
        ("[X] is [Y] ]", "unbalanced bracket"),
    ],
)
def test_malformed_templates_name_the_problem(text, message):
    with pytest.raises(TemplateError, match=message):
        parse_template(text, where="template P36/en")


def test_error_names_the_template():
    with pytest.raises(TemplateError, match="line 3 of templates.jsonl"):
        parse_template("no placeholders", where="line 3 of templates.jsonl")


def test_language_codes():
    assert check_language("zh-yue") == "zh-yue"
    with pytest.raises(UnknownLanguageError, match="not a language code"):
        check_language("Japanese")
    with pytest.raises(UnknownLanguageError, match="unknown language 'jp'.*ja"):
        check_language("jp", ["en", "ja"])
    assert check_languages(["en", "ja", "en"]) == ("en", "ja")


@pytest.mark.parametrize(
    "raw, norm",
    [
        ("tokyo_tower", "Tokyo tower"),
        ("  New   York ", "New York"),
        ("東京", "東京"),
        ("ßtraße", "ßtraße"),
        ("état", "État"),
    ],
)
def test_normalize_title(raw, norm):
    assert normalize_title(raw) == norm
