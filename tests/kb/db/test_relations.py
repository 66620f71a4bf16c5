"""Which relation a user's template expresses: exact in any language, else the closest template."""

import pytest

import kb
from kb.db.relations import match_relation, template_key


def test_template_keys_ignore_case_spacing_punctuation_and_width():
    assert template_key("The capital of [X] is [Y] .") == template_key("the capital of [x] is [y]")
    assert template_key("[X]の首都は[Y]です。") == template_key("[X] の首都は [Y] です")
    assert template_key("Ｔｈｅ capital of [X] is [Y]!") == template_key("The capital of [X] is [Y]")
    assert template_key("[X] is in [Y]") != template_key("[Y] is in [X]")


@pytest.mark.parametrize(
    "template, lang, pid, used",
    [
        ("[X] was founded in [Y]", "ja", "P740", "[X]は[Y]で設立されました。"),  # English typed, Japanese asked
        ("[X] was founded in [Y] .", "en", "P740", "[X] was founded in [Y] ."),
        ("[X] wurde in [Y] gegründet", "de", "P740", "[X] wurde in [Y] gegründet"),
        ("[X]は[Y]で設立されました", "ja", "P740", "[X]は[Y]で設立されました"),
        ("[X]의 설립지는 [Y]입니다.", "fr", "P740", "[X] a pour lieu de fondation [Y]."),  # Korean typed, French asked
    ],
)
def test_exact_matches_in_any_language(embedded_db, template, lang, pid, used):
    match = match_relation(embedded_db, template, lang)
    assert match.relation == pid and match.template.text == used
    assert all("assumed" not in n for n in match.notes)


@pytest.mark.parametrize(
    "template, lang, pid",
    [
        ("the capital city of [X] is [Y]", "en", "P36"),
        ("[X] works at [Y]", "en", "P108"),
        ("[X] ist in [Y] geboren", "de", "P19"),
        ("[X]は[Y]で設立された", "ja", "P740"),
        ("[X]の首都は[Y]", "ja", "P36"),
        ("[X] speaks the [Y] language", "en", "P1412"),
    ],
)
def test_the_closest_template_is_assumed_with_a_note(embedded_db, template, lang, pid):
    match = match_relation(embedded_db, template, lang)
    assert match.relation == pid
    note = match.notes[0]
    assert note.startswith(f"no template of this kb is {template!r}; assumed {pid}") and "similarity" in note
    assert "relation=" in note and "--relation" in note


@pytest.mark.parametrize(
    "template",
    [
        "[X] likes [Y].",
        "Frankly, [Y] is what [X] is about.",
        "[X] is the mother of [Y]",
        "[Y] is the capital of [X]",
        "[X] eats [Y]",
    ],
)
def test_unrelated_or_reversed_templates_match_nothing(embedded_db, template):
    assert match_relation(embedded_db, template, "en").relation is None


def test_templates_given_for_one_call_win(embedded_db):
    mine = {("P36", "en"): "[X] has [Y] as its capital.", ("P36", "ja"): "[X]という国の首都は[Y]。"}
    match = match_relation(embedded_db, "[X] has [Y] as its capital", "ja", templates=mine)
    assert match.relation == "P36" and match.template.text == "[X]という国の首都は[Y]。"
    with pytest.raises(kb.errors.NotFoundError, match="unknown to this kb"):
        match_relation(embedded_db, "[X] likes [Y]", "en", relation="P9999")
    assert (
        match_relation(
            embedded_db, "[X] likes [Y]", "en", relation="P9999", templates={("P9999", "en"): "[X] likes [Y]."}
        ).relation
        == "P9999"
    )
