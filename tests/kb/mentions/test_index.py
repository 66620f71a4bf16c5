import json
import pickle
import random
import sqlite3

import pytest

import kb
import kb.mentions.index
import kb.mentions.index_files
from kb.mentions.db_candidates import NameCandidates, default_source
from kb.mentions.index import Mention, MentionIndex
from kb.mentions.surfaces import surface_key
from tests.kb.mentions.linking_fixtures import write_linking_db


@pytest.fixture(scope="module")
def linking_db(tmp_path_factory):
    db = kb.EntityDB(write_linking_db(tmp_path_factory.mktemp("linking") / "linking.sqlite"))
    yield db
    db.close()


@pytest.fixture(scope="module")
def index(linking_db):
    return MentionIndex.build(linking_db)


@pytest.fixture(scope="module")
def embedded_index(embedded_db):
    return MentionIndex.build(embedded_db, languages=["en", "de", "ja", "ko", "hi", "tr"])


def spans(mentions):
    return [(m.surface, m.candidates[0].key) for m in mentions]


def test_longest_non_overlapping_matches_leftmost_first(index):
    text = "I moved from New York City to Paris, then to York."
    found = index.detect(text, "en")
    assert spans(found) == [("New York City", "Q60"), ("Paris", "Q90"), ("York", "Q42462")]
    for m in found:
        assert text[m.start : m.end] == m.surface
    # "New York" wins over "York": the leftmost match is taken first
    assert spans(index.detect("New York", "en")) == [("New York", "Q60")]


def test_word_boundaries_in_space_delimited_scripts(index):
    assert index.detect("Parisian yorkshire NewYork", "en") == []
    assert spans(index.detect("(Paris)-based, Paris's", "en")) == [("Paris", "Q90"), ("Paris", "Q90")]


def test_mentions_carry_link_probability_and_top_candidates(index):
    [m] = index.detect("a trip to paris", "en")
    assert m.link_probability == pytest.approx(0.5)
    assert m.nil_prior == pytest.approx(0.5)
    assert [c.key for c in m.candidates] == ["Q90", "Q830149"]
    assert m.candidates[0].count == 55 and m.candidates[0].source == "anchors"
    assert sum(c.prior for c in m.candidates) == pytest.approx(1.0)
    assert json.loads(json.dumps(m.to_dict()))["candidates"][0]["key"] == "Q90"
    assert index.candidates("en", "PARIS") == list(m.candidates)
    assert index.candidates("en", "Lyon") == []
    assert index.link_probability("en", "Paris") == pytest.approx(0.5)


def test_link_probability_filter_and_unscored_rule(linking_db, index):
    # "the" (0.001%) and "Times" (0.1%) are under the default 1%
    assert index.detect("the Times", "en") == []
    # names without statistics are dropped in a language that has statistics...
    assert index.detect("Rio de Janeiro", "en") == []
    assert index.stats()["en"]["keep_unscored"] == 0 and index.stats()["de"]["keep_unscored"] == 1
    # ... unless asked for
    keep = MentionIndex.build(linking_db, languages=["en"], keep_unscored=True)
    [m] = keep.detect("Rio de Janeiro", "en")
    assert m.link_probability is None and m.nil_prior is None
    low = MentionIndex.build(linking_db, languages=["en"], min_link_probability=0.0005)
    assert spans(low.detect("the Times", "en")) == [("Times", "Q11259")]


def test_raising_the_threshold_at_query_time_falls_back_to_shorter_matches(index):
    text = "read the New York Times today"
    assert spans(index.detect(text, "en")) == [("New York Times", "Q9684")]  # lp 0.02
    # at 10%, "New York Times" is refused and "New York" (50%) takes its place
    assert spans(index.detect(text, "en", min_link_probability=0.1)) == [("New York", "Q60")]
    assert spans(index.detect(text, "en", min_link_probability=0.6)) == []
    with pytest.raises(kb.OptionError, match="built with min_link_probability=0.01"):
        index.detect(text, "en", min_link_probability=0.001)
    with pytest.raises(kb.OptionError, match="between 0 and 1"):
        index.detect(text, "en", min_link_probability=2.0)


def test_offsets_refer_to_the_original_text_when_folding_changes_lengths(index):
    text = "ＮＥＷ ＹＯＲＫ, Straße, the ﬁlm festival and İstanbul, AT & T."
    found = index.detect(text, "en")
    assert [m.surface for m in found] == ["ＮＥＷ ＹＯＲＫ", "Straße", "ﬁlm festival", "İstanbul", "AT & T"]
    for m in found:
        assert text[m.start : m.end] == m.surface
    assert [c.key for c in found[3].candidates] == ["Q406"]


def test_unspaced_scripts_match_anywhere(index):
    text = "東京都に住み、京都とカナダへ行った。"
    assert spans(index.detect(text, "ja")) == [("東京都", "Q1490"), ("京都", "Q1861"), ("カナダ", "Q16")]
    thai = "ฉันอยู่ที่กรุงเทพมหานคร"
    [m] = index.detect(thai, "th")
    assert m.surface == "กรุงเทพมหานคร" and thai[m.start : m.end] == m.surface


def test_korean_matches_at_word_starts_with_attached_particles(index):
    found = index.detect("서울에서 대한민국의 수도 서울산", "ko")
    # 서울 + 에서, 대한민국 + 의; "울산" inside "서울산" is not a word start, "서울" is
    assert [m.surface for m in found] == ["서울", "대한민국", "서울"]
    assert index.detect("대서울", "ko") == []


def test_mixed_scripts_follow_each_characters_script(index):
    found = index.detect("東京とTokyoとTokyoiteと서울", "ja")
    # Latin "Tokyo" is a word inside Japanese text; "Tokyoite" is another word; Korean is not in the ja table
    assert [m.surface for m in found] == ["東京", "Tokyo"]
    assert spans(index.detect("I saw 東京 and New York", "en")) == [("New York", "Q60")]


def test_turkish_dotted_and_dotless_i(index):
    found = index.detect("İSTANBUL, istanbul, Istanbul Boğazı", "tr")
    assert spans(found) == [("İSTANBUL", "Q406"), ("istanbul", "Q406"), ("Istanbul Boğazı", "Q1000")]


def test_bad_input(index):
    assert index.detect("", "en") == [] and index.detect(" \n\t ", "en") == []
    with pytest.raises(kb.TextInputError, match="expects a str, got bytes"):
        index.detect(b"Paris", "en")
    with pytest.raises(kb.TextInputError, match="one str"):
        index.detect_batch("Paris", "en")
    with pytest.raises(kb.UnknownLanguageError, match="'jp' is not|unknown language 'jp'"):
        index.detect("Paris", "jp")
    with pytest.raises(kb.UnknownLanguageError, match="it has de, en, ja, ko, th, tr"):
        index.detect("Paris", "fr")
    with pytest.raises(kb.UnknownLanguageError, match="not a language code"):
        index.detect("Paris", "EN!")


def test_batch_equals_one_by_one(index):
    texts = ["Paris and New York", "", "nothing here", "York, York"]
    assert index.detect_batch(texts, "en") == [index.detect(t, "en") for t in texts]


def _ascii_text(rng, n):
    words = [
        "New",
        "York",
        "City",
        "Times",
        "Paris",
        "PARIS",
        "the",
        "AT&T",
        "AT",
        "&",
        "T",
        "festival",
        "and",
        ",",
        "york-city",
        "Paris2",
        "2",
        "\n",
        "\t",
        "\x1f",
        "\x00",
        "~",
        "newyork",
        "NEW  YORK",
    ]
    return " ".join(rng.choice(words) for _ in range(n))


def test_ascii_batches_equal_one_by_one(index, monkeypatch):
    rng = random.Random(3)
    texts = [_ascii_text(rng, rng.randrange(0, 40)) for _ in range(300)]
    texts += ["Paris and Straße", "München, New York", "x" * 10 + " Paris"]  # not ASCII: one at a time
    rng.shuffle(texts)
    expected = [index.detect(t, "en") for t in texts]
    assert index.detect_batch(texts, "en") == expected and sum(map(len, expected)) > 500
    monkeypatch.setattr(kb.mentions.index, "_BATCH_CHARS", 50)  # many small batches
    assert index.detect_batch(texts, "en") == expected
    long_text = "Paris " * 20  # beyond CHUNK_CHARS: the chunked path of detect()
    monkeypatch.setattr(kb.mentions.index, "CHUNK_CHARS", 30)
    assert index.detect_batch([long_text, "York"], "en") == [index.detect(long_text, "en"), index.detect("York", "en")]
    raised = index.detect_batch(texts, "en", min_link_probability=0.5)  # a raised threshold: one at a time
    assert raised == [index.detect(t, "en", min_link_probability=0.5) for t in texts]
    with pytest.raises(kb.TextInputError, match="expects a str, got int"):
        index.detect_batch(["Paris", 3], "en")
    assert index.detect_batch((t for t in texts[:20]), "en") == expected[:20]  # any iterable


def _cut_like_the_tokenizer(texts, classes):
    import numpy as np

    from kb.mentions.surfaces import token_bounds
    from kb.mentions.units import cut

    for text in texts:
        starts, ends = cut(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32), classes)
        units, bounds = token_bounds(text)
        assert list(zip(starts.tolist(), ends.tolist())) == list(zip(bounds[0::2], bounds[1::2])), text
        assert [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())] == units


def test_units_are_cut_like_the_tokenizer():
    from kb.mentions.surfaces import has_hangul
    from kb.mentions.units import ascii_classes, bmp_classes

    rng = random.Random(5)
    _cut_like_the_tokenizer(
        ["".join(chr(rng.randrange(128)) for _ in range(rng.randrange(0, 60))).lower() for _ in range(200)],
        ascii_classes(),
    )
    # BMP text: letters of several scripts, combining marks (after letters, spaces, punctuation and Han),
    # unspaced scripts, digits, punctuation, symbols, odd spaces, joiners
    pieces = [
        "a",
        "é",
        "z",
        "9",
        "ж",
        "ω",
        "ب",
        "क",
        "्",
        "\u0301",
        "\u0301\u0302",
        "東",
        "の",
        "カ",
        "ก",
        "\u0e31",
        "ສ",
        " ",
        "  ",
        "\u3000",
        "\u00a0",
        "\n",
        ".",
        ",",
        "-",
        "&",
        "\u200d",
        "\u200c",
        "€",
        "½",
        "x\u0301y",
    ]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 40))) for _ in range(500)]
    texts += ["".join(chr(rng.randrange(0x80, 0x10000)) for _ in range(30)) for _ in range(100)]
    usable = [t for t in texts if not has_hangul(t)]
    assert len(usable) > 450  # Hangul texts take the one-at-a-time way
    _cut_like_the_tokenizer(usable, bmp_classes())


def test_unit_table_finds_its_units_and_only_them():
    import numpy as np

    from kb.mentions.units import UnitTable, ascii_classes, cut

    rng = random.Random(2)
    words = sorted({"".join(rng.choice("abcdefgh") for _ in range(rng.randrange(1, 6))) for _ in range(300)})
    for units in (["ab"], words[:3], words):  # small tables: every home slot must exist
        table = UnitTable.build(units)
        text = " ".join([*words, "zz", "q"])
        buf = np.frombuffer(text.encode("utf-32-le"), np.uint32)
        starts, ends = cut(buf, ascii_classes())
        ids = table.lookup(buf, starts, ends).tolist()
        position = {u: i for i, u in enumerate(units)}
        assert ids == [position.get(text[a:b], -1) for a, b in zip(starts.tolist(), ends.tolist())]


def test_batches_equal_one_by_one_in_every_language(embedded_db):
    from kb.languages import MLUKE_LANGUAGES

    index = MentionIndex.build(embedded_db)
    rng = random.Random(1)
    keys = [*embedded_db.keys("country"), *embedded_db.keys("language"), *list(embedded_db.keys("city"))[:500]]
    noise = [" ", ", ", ". ", "\n", "-", "(", "\u0301", "\u200d", "ß", "ﬁ", "İ"]  # separators, folding
    noise += ["１２", "x", "東", "ก", "\u3000", "\u00a0"]  # full-width, other scripts, other spaces
    for lang in MLUKE_LANGUAGES:
        names = sorted(embedded_db.labels(keys, lang).values())
        texts = []
        for _ in range(40):
            parts = [
                rng.choice(names) if rng.random() < 0.6 else rng.choice(noise) for _ in range(rng.randrange(0, 25))
            ]
            parts += [w[: rng.randrange(len(w) + 1)] for w in rng.sample(names, 3)]  # cut names
            rng.shuffle(parts)
            texts.append(("" if rng.random() < 0.3 else " ").join(parts))
        expected = [index.detect(t, lang) for t in texts]
        assert index.detect_batch(texts, lang) == expected and sum(map(len, expected)) > 100, lang


def test_batches_of_other_scripts_equal_one_by_one(embedded_index):
    rng = random.Random(11)
    for lang, words in {
        "de": [
            "Paris",
            "München",
            "Köln",
            "Österreich",
            "liegt",
            "in",
            "Straße",
            "ﬁlm",
            "Valencia",
            ",",
            "\u0301",
            "Ü",
        ],
        "ja": ["東京", "都", "京都", "カナダ", "に", "Tokyo", "、", "ｶﾞ", "日本", "の", "首都"],
        "hi": ["भारत", "दिल्ली", "की", "राजधानी", "है", "।", "Delhi"],
        "ko": ["서울", "서울에서", "한국", "의", "수도", "Seoul"],
    }.items():
        sep = "" if lang == "ja" else " "
        texts = [sep.join(rng.choice(words) for _ in range(rng.randrange(0, 30))) for _ in range(200)]
        texts += ["Paris\ud800 München \U0001f600 Köln", "\udfff"]  # a lone surrogate; beyond the BMP
        expected = [embedded_index.detect(t, lang) for t in texts]
        assert embedded_index.detect_batch(texts, lang) == expected and sum(map(len, expected)) > 100, lang


def test_colliding_unit_hashes_fall_back_to_one_text_at_a_time(linking_db, monkeypatch):
    import kb.mentions.units

    assert kb.mentions.units.UnitTable.build(["ab", "ba", "Straße", "\U0001f600"]) is not None
    monkeypatch.setattr(kb.mentions.units, "_BASES", (1, 1))  # a hash that is the sum of the characters
    assert kb.mentions.units.UnitTable.build(["ab", "ba"]) is None
    fresh = MentionIndex.build(linking_db, languages=["en"])
    texts = ["Paris and New York", "York, York", "kroy wen"]
    assert fresh.detect_batch(texts, "en") == [fresh.detect(t, "en") for t in texts]
    assert fresh.detect("kroy wen", "en") == [] and fresh.detect_batch(["kroy wen"], "en") == [[]]  # only a false match


def _random_text(rng, lang, n):
    words = {
        "en": [
            "New",
            "York",
            "City",
            "Times",
            "Paris",
            "paris",
            "the",
            "AT&T",
            "Straße",
            "ﬁlm",
            "festival",
            "and",
            ",",
            "\n",
        ],
        "ja": ["東京", "都", "京都", "カナダ", "に", "Tokyo", "、", "ｶﾞ"],
    }[lang]
    sep = " " if lang == "en" else ""
    return sep.join(rng.choice(words) for _ in range(n))


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_chunked_detection_equals_whole_text_detection(index, monkeypatch, lang):
    text = _random_text(random.Random(7), lang, 3000)
    whole = index.detect(text, lang)
    monkeypatch.setattr(kb.mentions.index, "CHUNK_CHARS", 97)  # many chunk borders, some inside mentions
    chunked = index.detect(text, lang)
    assert chunked == whole and len(whole) > 300


def test_one_megabyte_text_is_processed_in_chunks(index):
    sentence = "From New York City to Paris and back to York. "
    text = sentence * (2**20 // len(sentence) + 1)
    assert len(text) > 2**20 > kb.mentions.index.CHUNK_CHARS
    found = index.detect(text, "en")
    n = text.count(sentence)
    assert len(found) == 3 * n
    assert {m.surface for m in found} == {"New York City", "Paris", "York"}
    last = found[-1]
    assert text[last.start : last.end] == "York" and last.start == len(text) - len(sentence) + sentence.index("York.")


def test_embedded_kb_ambiguous_names_across_languages(embedded_index):
    [m] = embedded_index.detect("Ich wohne in Valencia.", "de")
    assert m.surface == "Valencia" and len(m.candidates) >= 2
    assert m.candidates[0].prior > m.candidates[1].prior  # the one titled plainly "Valencia" first
    assert m.link_probability is None  # the embedded kb has no link statistics
    en = embedded_index.detect("London, Hyderabad and San José are cities.", "en")
    assert [x.surface for x in en] == ["London", "Hyderabad", "San José"]
    assert all(len(x.candidates) >= 2 for x in en[:2])
    assert embedded_index.detect("東京と大阪に行きました。", "ja")[0].surface == "東京"
    assert [x.surface for x in embedded_index.detect("서울에서 부산까지", "ko")] == ["서울", "부산"]
    assert [x.surface for x in embedded_index.detect("नई दिल्ली भारत की राजधानी है।", "hi")] == ["नई दिल्ली", "भारत"]
    assert "İstanbul" in [x.surface for x in embedded_index.detect("İstanbul büyük bir şehir.", "tr")]


def test_index_candidates_agree_with_the_source(linking_db, index):
    source = default_source(linking_db)
    for lang in index.languages:
        keep = index.stats()[lang]["keep_unscored"]
        for entry in source.entries(lang):
            lp = entry.link_probability
            if entry.candidates and ((lp is None and keep) or (lp is not None and lp >= 0.01)):
                assert index.candidates(lang, entry.key) == list(entry.candidates), (lang, entry.key)
                assert index.link_probability(lang, entry.key) == lp


def test_save_load_round_trip_records_format_and_provenance(linking_db, index, tmp_path):
    path = index.save(tmp_path / "mentions.sqlite")
    loaded = MentionIndex.load(path)
    text = "New York City, Paris; 東京都"
    for lang in ("en", "ja"):
        assert loaded.detect(text, lang) == index.detect(text, lang)
    assert loaded.stats() == index.stats() and loaded.min_link_probability == 0.01
    prov = loaded.provenance
    assert prov["builder"] == "kb.MentionIndex.build" and prov["source"]["source"] == "combined"
    assert prov["source"]["parts"][0]["database"] == str(linking_db.path)
    meta = dict(sqlite3.connect(path).execute("SELECT key, value FROM meta"))
    assert meta["format"] == "mluke-mention-index" and meta["format_version"] == str(
        kb.mentions.index_files.FORMAT_VERSION
    )
    with pytest.raises(kb.OutputExistsError):
        index.save(path)
    assert pickle.loads(pickle.dumps(loaded)).detect(text, "ja") == index.detect(text, "ja")  # by path
    with pytest.raises(kb.MlukeError, match="save"):
        pickle.dumps(index)
    loaded.save(tmp_path / "copy.sqlite")  # a loaded index saves too
    assert MentionIndex.load(tmp_path / "copy.sqlite").detect(text, "en") == index.detect(text, "en")


def test_load_rejects_other_and_damaged_files(linking_db, index, tmp_path):
    with pytest.raises(kb.KbFormatError, match="expected an mluke mention index"):
        MentionIndex.load(linking_db.path)
    with pytest.raises(kb.KbFormatError, match="no such file"):
        MentionIndex.load(tmp_path / "missing.sqlite")
    path = index.save(tmp_path / "damaged.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE blobs SET data = x'00' WHERE lang = 'en' AND name = 'automaton'")
    conn.commit()
    conn.close()
    damaged = MentionIndex.load(path)
    assert damaged.detect("東京", "ja")  # other languages still work
    with pytest.raises(kb.KbFormatError, match="damaged data for 'en'"):
        damaged.detect("Paris", "en")


def test_for_db_caches_the_index(linking_db):
    first = MentionIndex.for_db(linking_db, languages=["en"])
    again = MentionIndex.for_db(linking_db, languages=["en"])
    assert first.path == again.path and first.path.exists()
    other = MentionIndex.for_db(linking_db, languages=["en"], min_link_probability=0.05)
    assert other.path != first.path and other.min_link_probability == 0.05


def test_build_rejects_bad_options_and_unsorted_sources(linking_db):
    with pytest.raises(kb.OptionError, match="between 0 and 1"):
        MentionIndex.build(linking_db, min_link_probability=-0.1)
    with pytest.raises(kb.UnknownLanguageError):
        MentionIndex.build(linking_db, languages=["fr"])

    class Unsorted(NameCandidates):
        def entries(self, lang):
            return reversed(list(super().entries(lang)))

    with pytest.raises(kb.KbFormatError, match="not in ascending order"):
        MentionIndex.build(Unsorted(linking_db), languages=["de"])


def test_mentions_are_plain_data():
    m = Mention(0, 5, "Paris", None, ())
    assert m.nil_prior is None and m.to_dict()["candidates"] == []
    assert surface_key(m.surface) == "paris"
