import json

import pytest

import kb
from kb import EntityVocab, KbFormatError, NotFoundError, OutputExistsError


def test_build_ranks_by_links_then_key_with_special_ids_first(tmp_path, tiny_db):
    v = EntityVocab.build(tiny_db, tmp_path / "v.sqlite", min_languages=1)
    assert [v.pad_id, v.unk_id, v.mask_id, v.mask2_id] == [0, 1, 2, 3]
    order = [v.entry(i).key for i in range(4, len(v))]
    # Q17: 800 links, Q1490: 400, Q35: 50, then unlinked by key
    assert order == ["Q17", "Q1490", "Q35", "Q1748", "Q5287"]
    assert v.entry(4).count == 800 and v.entry(4).title("ja") == "日本"
    assert v.get_id("ja", "日本") == v.get_id("en", "Japan") == v.get_id("ar", "اليابان") == 4
    assert v.get_id("en", "japan") == 4  # normalised title
    assert v.get_id("en", "Atlantis") is None
    assert v.get_ids([("en", "Tokyo"), ("xx", "?"), ("ja", "東京都")]) == [5, None, 5]
    assert v.id_of_key("Q35") == 6 and v.ids_of_keys(["Q5287", "Q0"]) == [8, None]


def test_min_languages_and_size(tmp_path, tiny_db):
    v = EntityVocab.build(tiny_db, tmp_path / "v.sqlite", min_languages=2)
    assert [e.key for e in v if e.key] == ["Q17", "Q1490", "Q5287"]
    v3 = EntityVocab.build(tiny_db, tmp_path / "v3.sqlite", min_languages=3)
    assert [e.key for e in v3 if e.key] == ["Q17"]
    small = EntityVocab.build(tiny_db, tmp_path / "s.sqlite", min_languages=1, size=2)
    assert len(small) == 6
    only_ja = EntityVocab.build(tiny_db, tmp_path / "ja.sqlite", min_languages=1, languages=["ja"])
    assert only_ja.languages() == ["ja"]


def test_build_is_deterministic(tmp_path, embedded_db):
    a = EntityVocab.build(embedded_db, tmp_path / "a.sqlite", size=500)
    b = EntityVocab.build(embedded_db, tmp_path / "b.sqlite", size=500)
    assert list(a) == list(b) and len(a) == 504
    assert all(len({l for l, _ in e.names}) >= 3 for e in a if not e.special)


def test_hf_round_trip_keeps_ids(tmp_path, tiny_db):
    v = EntityVocab.build(tiny_db, tmp_path / "v.sqlite", min_languages=1)
    out = v.export_hf(tmp_path / "entity_vocab.json")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["[MASK]"] == 2 and data["en:Japan"] == data["ja:日本"] == 4
    back = EntityVocab.import_hf(out, tmp_path / "back.sqlite", db=tiny_db)
    assert [(e.id, e.key, e.special, e.names) for e in back] == [(e.id, e.key, e.special, e.names) for e in v]
    with pytest.raises(OutputExistsError):
        v.export_hf(out)


def test_hf_import_reads_special_ids_from_the_file(tmp_path):
    # the lite checkpoints' layout: [MASK]=0, [UNK]=1, [PAD]=2, [MASK2]=3
    src = tmp_path / "entity_vocab.json"
    hf = {"[MASK]": 0, "[UNK]": 1, "[PAD]": 2, "[MASK2]": 3, "en:Tokyo": 4, "ja:東京": 4}
    src.write_text(json.dumps(hf | {"en:Star Wars: A New Hope": 5}, ensure_ascii=False), encoding="utf-8")
    v = EntityVocab.import_hf(src, tmp_path / "v.sqlite")
    assert (v.mask_id, v.unk_id, v.pad_id, v.mask2_id) == (0, 1, 2, 3)
    assert v.get_id("ja", "東京") == 4 and v.get_id("en", "Star Wars: A New Hope") == 5
    assert v.entry(4).key is None  # no database given: ids without QIDs


def test_from_entries_keeps_ids_specials_and_provenance(tmp_path):
    entries = [kb.VocabEntry(3, None, "[MASK]", 0, ()), kb.VocabEntry(0, None, "[PAD]", 0, ())]
    entries += [kb.VocabEntry(7, "Q17", None, 5, (("en", "Japan"), ("ja", "日本")))]
    v = EntityVocab.from_entries(iter(entries), tmp_path / "v.sqlite", provenance={"made by": "a test"})
    assert (v.mask_id, v.pad_id, len(v)) == (3, 0, 8)  # len: the embedding rows, 0 to the largest id
    assert v.get_id("ja", "日本") == v.get_id("en", "Japan") == 7 and v.entry(7).key == "Q17"
    assert v.provenance["builder"] == "kb.EntityVocab.from_entries" and v.provenance["made by"] == "a test"
    with pytest.raises(OutputExistsError):
        EntityVocab.from_entries(entries, tmp_path / "v.sqlite")
    with pytest.raises(KbFormatError):  # the same id twice
        EntityVocab.from_entries([*entries, kb.VocabEntry(7, "Q18", None, 0, ())], tmp_path / "w.sqlite")


def test_hf_import_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"Tokyo": 4}')
    with pytest.raises(KbFormatError, match="no language prefix"):
        EntityVocab.import_hf(bad, tmp_path / "v.sqlite")
    v = EntityVocab.import_hf(bad, tmp_path / "v.sqlite", default_lang="en")
    assert v.get_id("en", "Tokyo") == 4
    with pytest.raises(NotFoundError, match="no special entity '\\[MASK\\]'"):
        v.mask_id
    bad.write_text('{"en:Tokyo": "four"}')
    with pytest.raises(KbFormatError, match='has id "four"'):
        EntityVocab.import_hf(bad, tmp_path / "w.sqlite")
    bad.write_text('{"en:Tokyo": 4,')
    with pytest.raises(KbFormatError, match="not valid JSON"):
        EntityVocab.import_hf(bad, tmp_path / "w.sqlite")
    bad.write_text("[1, 2]")
    with pytest.raises(KbFormatError, match="expected a JSON object"):
        EntityVocab.import_hf(bad, tmp_path / "w.sqlite")
    bad.write_text('{"en:Tokyo": 4, "en:Tokyo ": 5}')  # same normalised title? no: exact titles are kept
    assert EntityVocab.import_hf(bad, tmp_path / "w.sqlite").get_id("en", "Tokyo ") == 5
    with pytest.raises(KbFormatError, match="no such file"):
        EntityVocab.import_hf(tmp_path / "missing.json", tmp_path / "x.sqlite")
    assert not (tmp_path / "x.sqlite").exists()


def test_jsonl_round_trip_and_errors(tmp_path, tiny_db):
    v = EntityVocab.build(tiny_db, tmp_path / "v.sqlite", min_languages=1)
    out = v.export_jsonl(tmp_path / "entity_vocab.jsonl")
    lines = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
    assert lines[2] == {"id": 2, "entities": [["[MASK]", "ar"], ["[MASK]", "en"], ["[MASK]", "ja"]], "count": 0}
    assert lines[4]["count"] == 800 and ["日本", "ja"] in lines[4]["entities"]
    back = EntityVocab.import_jsonl(out, tmp_path / "back.sqlite", db=tiny_db)
    assert [(e.id, e.key, e.special, e.count, e.names) for e in back] == [
        (e.id, e.key, e.special, e.count, e.names) for e in v
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 0, "entities": [["[PAD]", "en"]], "count": 0}\n{"id": 1, "entities": "oops"}\n')
    with pytest.raises(KbFormatError, match="line 2"):
        EntityVocab.import_jsonl(bad, tmp_path / "b.sqlite")
    dup = tmp_path / "dup.jsonl"
    dup.write_text(
        '{"id": 4, "entities": [["Tokyo", "en"]], "count": 1}\n{"id": 5, "entities": [["Tokyo", "en"]], "count": 1}\n'
    )
    with pytest.raises(KbFormatError, match="appears twice"):
        EntityVocab.import_jsonl(dup, tmp_path / "d.sqlite")
    assert not (tmp_path / "d.sqlite").exists()


def test_vocab_rejects_a_database_file(tiny_db):
    with pytest.raises(KbFormatError, match="expected an mluke entity vocabulary"):
        EntityVocab(tiny_db.path)


def test_bad_sizes(tmp_path, tiny_db):
    with pytest.raises(ValueError, match="must be positive"):
        EntityVocab.build(tiny_db, tmp_path / "v.sqlite", size=0)
    with pytest.raises(kb.UnknownLanguageError):
        EntityVocab.build(tiny_db, tmp_path / "v.sqlite", languages=["de"])


@pytest.mark.parametrize("chunk", [3, 7, 64, 1 << 20])
def test_streamed_hf_reader_at_any_chunk_size(tmp_path, chunk):
    from kb.vocab.interchange import stream_json_object

    data = {
        "[PAD]": 0,
        'en:A "quoted" title': 4,
        "ja:東京": 5,
        "en:Back\\slash": 6,
        "zh:\u4e1c\u4eac": 7,
        "en:Emoji 😀 𠮷": 8,
    }
    path = tmp_path / "v.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    got = [(k, int(v)) for k, v in stream_json_object(path, chunk=chunk)]
    assert got == list(data.items())
    path.write_text(json.dumps(data), encoding="utf-8")  # ASCII escapes
    assert [(k, int(v)) for k, v in stream_json_object(path, chunk=chunk)] == list(data.items())


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"en:Tokyo": 4.5}', "has id 4.5"),
        ('{"en:Tokyo": -4}', "has id -4"),
        ('{"en:Tokyo": [4]}', "not valid JSON at character 1"),
        ('{"en:Tokyo": 4} trailing', "text after the closing"),
        ('{"en:Tokyo" 4}', "not valid JSON at character 1"),
        ("  ", "does not start with"),
    ],
)
def test_streamed_hf_reader_errors(tmp_path, text, message):
    path = tmp_path / "v.json"
    path.write_text(text)
    with pytest.raises(KbFormatError, match=message):
        EntityVocab.import_hf(path, tmp_path / "v.sqlite")
    assert not (tmp_path / "v.sqlite").exists()


def test_empty_hf_object(tmp_path):
    path = tmp_path / "v.json"
    path.write_text("{ }")
    assert len(EntityVocab.import_hf(path, tmp_path / "v.sqlite")) == 0


def test_an_empty_vocabulary_is_refused_with_the_fix(tmp_path, tiny_db, cli):
    out = tmp_path / "v.sqlite"
    with pytest.raises(kb.OptionError) as e:
        EntityVocab.build(tiny_db, out, languages=["en", "ja"])
    assert str(e.value) == (
        f"min_languages=3: counting the 2 languages (en, ja) of {tiny_db.path}, no entity can have a title in 3, "
        "so the vocabulary would be empty; pass min_languages=2"
    )
    with kb.EntityDB.create(tmp_path / "apart.sqlite", provenance={"builder": "tests"}) as w:
        w.add_languages(["en", "ja"])
        w.add_entity("Q1", "city")
        w.add_title("en", "Alpha", "Q1")
        w.add_entity("Q2", "city")
        w.add_title("ja", "ベータ", "Q2")
    with (
        kb.EntityDB(tmp_path / "apart.sqlite") as apart,
        pytest.raises(
            kb.OptionError,
            match=r"min_languages=2: counting the 2 languages .*, no entity has a title in 2, .*; pass min_languages=1",
        ),
    ):
        EntityVocab.build(apart, out, min_languages=2)
    res = cli("kb", "vocab", tiny_db.path, "-o", out, "--languages", "en,ja")
    assert isinstance(res.exception, kb.OptionError) and not out.exists()
    assert res.exception.for_cli().startswith("--min-languages 3: counting the 2 languages (en, ja)")
    assert res.exception.for_cli().endswith("; pass --min-languages 2")
