import unicodedata

import pytest

from kb.mentions.surfaces import (
    WORD_START,
    fold,
    fold_aligned,
    join_tokens,
    matching_units,
    safe_cut,
    surface_key,
    token_spans,
    tokenize,
)

SAMPLES = [
    "Ｔｏｋｙｏ ﬁlm festival in Straße, ΣΊΣΥΦΟΣ and İstanbul!",
    "ｶﾞｷﾞの東京タワーは東京都港区にある。Tokyo Towerとも呼ばれる。",
    "e\u0301cole, naïve, Ångström (A\u030angstrom) ½ ㍿ ﬀ",
    "नई दिल्ली भारत की राजधानी है। বাংলা ভাষা তেলుగు",
    "กรุงเทพมหานครเป็นเมืองหลวง 서울에서 만나요 القاهرة عاصمة مصر",
    "𠮷野家 𝐀𝐁𝐂 abc𝐀def 𑀓𑀸 ǅemal ΐ ﬃ",
]


def test_fold_normalises_width_ligatures_case_and_turkish_i():
    assert fold("Ｔｏｋｙｏ") == "tokyo"
    assert fold("ﬁlm") == "film"
    assert fold("Straße") == "strasse"
    assert fold("ΣΊΣΥΦΟΣ") == fold("σίσυφος") == "σίσυφοσ"  # final sigma folds
    assert fold("İstanbul") == fold("Istanbul") == fold("ISTANBUL") == fold("ıstanbul") == "istanbul"
    assert fold("e\u0301cole") == "école"  # composed after folding
    # scripts without case are left alone
    for text in ("東京タワー", "القاهرة", "กรุงเทพ", "서울"):
        assert fold(text) == unicodedata.normalize("NFKC", text)


@pytest.mark.parametrize("text", SAMPLES)
def test_fold_is_idempotent(text):
    assert fold(fold(text)) == fold(text)
    assert surface_key(surface_key(text)) == surface_key(text)


@pytest.mark.parametrize("text", SAMPLES)
def test_offsets_map_every_token_back_to_the_original(text):
    folded = fold_aligned(text)
    assert folded.folded == fold(text)
    tokens, starts, ends = token_spans(folded.folded)
    assert tokens == tokenize(folded.folded)
    for tok, s, e in zip(tokens, starts, ends):
        assert folded.folded[s:e] == tok
        span = folded.original_span(s, e)
        if span is not None:  # a token that starts or ends inside a segment has no exact original span
            assert fold(text[span[0] : span[1]]) == tok, (tok, text[span[0] : span[1]])


@pytest.mark.parametrize(
    ("text", "folded", "token", "original"),
    [
        ("the ﬁlm", "the film", "film", "ﬁlm"),  # 1 character -> 2
        ("big Straße now", "big strasse now", "strasse", "Straße"),
        ("ｉｎ Ｔｏｋｙｏ ok", "in tokyo ok", "tokyo", "Ｔｏｋｙｏ"),  # same length, other characters
        ("from İzmir on", "from izmir on", "izmir", "İzmir"),
        ("ｶﾞｷﾞ屋", "ガギ屋", "ギ", "ｷﾞ"),  # 2 characters -> 1
        ("an e\u0301cole", "an école", "école", "e\u0301cole"),
        ("a ㍿ b", "a 株式会社 b", "株", None),  # inside a segment: no exact span
    ],
)
def test_original_spans_of_length_changing_characters(text, folded, token, original):
    f = fold_aligned(text)
    assert f.folded == folded
    s = folded.index(token)
    span = f.original_span(s, s + len(token))
    if original is None:
        assert span is None
    else:
        assert text[span[0] : span[1]] == original


def test_tokens_follow_the_script_of_each_character():
    assert tokenize(fold("Paris, the Parisian (France)")) == ["paris", ",", "the", "parisian", "(", "france", ")"]
    assert tokenize("東京タワー") == ["東", "京", "タ", "ワ", "ー"]
    assert tokenize("東京towerは") == ["東", "京", "tower", "は"]  # mixed scripts, no spaces
    assert tokenize("กรุงเทพ") == ["ก", "รุ", "ง", "เ", "ท", "พ"]  # marks stay with their consonant
    assert tokenize("서울에서 만나요") == ["서울에서", "만나요"]
    assert tokenize("नई दिल्ली") == ["नई", "दिल्ली"]  # virama and vowel signs stay inside the word
    assert tokenize("l'italia") == ["l", "'", "italia"]
    assert tokenize("𠮷野家") == ["𠮷", "野", "家"]  # Han outside the BMP is unspaced too
    assert tokenize("abc𝐀def") == ["abc𝐀def"] and tokenize(fold("abc𝐀def")) == ["abcadef"]  # supplementary letters
    assert tokenize("   ") == [] and tokenize("") == []


def test_surface_keys_are_canonical():
    assert surface_key("AT & T") == surface_key("AT&T") == "at&t"
    assert surface_key("  New   York ") == "new york"
    assert surface_key("東京 タワー") == surface_key("東京タワー") == "東京タワー"
    assert surface_key("Tokyo Tower") != surface_key("TokyoTower")
    assert join_tokens(["new", "york", "(", "city", ")"]) == "new york(city)"
    assert surface_key("") == "" and surface_key(" \t") == ""


def test_hangul_words_split_into_syllables_with_a_word_start_mark():
    assert matching_units(surface_key("서울 특별시")) == [f"{WORD_START}서", "울", f"{WORD_START}특", "별", "시"]
    assert matching_units("tokyo 東京") == ["tokyo", "東", "京"]


def test_safe_cut_prefers_whitespace_and_never_splits_a_segment():
    text = "abc def ghi"
    assert safe_cut(text, 9) == 7
    cjk = "東京都に住む" * 4
    assert safe_cut(cjk, 10) == 10  # between two unspaced characters
    thai = "กรุงเทพ" * 4
    cut = safe_cut(thai, 2)  # index 2 is a vowel mark: cut before its consonant instead
    assert cut == 1
    assert safe_cut("a" * 3000, 2500) == 2500  # no good place: cut anyway


def test_ascii_fast_path_gives_the_same_tokens():
    import random
    import string

    from kb.mentions.surfaces import _token_re, token_bounds

    rng = random.Random(3)
    alphabet = string.ascii_lowercase + string.digits + string.punctuation + " \t\n\x00\x7f"
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        parts = _token_re().split(text)
        tokens, bounds = token_bounds(text)
        assert tokens == parts[1::2]
        assert [text[bounds[2 * i] : bounds[2 * i + 1]] for i in range(len(tokens))] == tokens
