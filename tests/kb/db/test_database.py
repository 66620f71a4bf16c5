import json
import multiprocessing
import pickle
import shutil
import sqlite3

import pytest

import kb
import kb.db.writer
from kb import (
    EntityDB,
    KbFormatError,
    NotFoundError,
    OutputExistsError,
    SchemaVersionError,
)
from tests.conftest import write_tiny_db


def test_lookup_by_title_label_alias(tiny_db):
    assert tiny_db.lookup("ja", "日本") == [kb.Match("Q17", "title")]
    # title first, then an alias of another entity
    assert tiny_db.lookup("en", "Tokyo") == [kb.Match("Q1490", "title"), kb.Match("Q1748", "alias")]
    assert tiny_db.lookup("en", "Tokyo", aliases=False) == [kb.Match("Q1490", "title")]
    assert tiny_db.lookup("en", "Nihon") == [kb.Match("Q17", "alias")]
    assert tiny_db.lookup("ja", "東京") == [kb.Match("Q1490", "label")]
    assert tiny_db.lookup("en", "japan") == [kb.Match("Q17", "title")]  # first letter is case-insensitive
    assert tiny_db.lookup("en", "no such thing") == []


def test_redirects_multi_hop_loops_and_dangling(tiny_db):
    assert tiny_db.resolve_title("en", "Nippon") == "Q17"  # Nippon -> State of Japan -> Japan
    assert tiny_db.lookup("en", "Nippon") == [kb.Match("Q17", "redirect")]
    assert tiny_db.resolve_redirect("en", "state_of_Japan") == "Japan"
    assert tiny_db.resolve_title("en", "Loop A") is None
    assert tiny_db.resolve_title("en", "Nowhere") is None


def test_titles_and_entities_both_ways(tiny_db):
    assert tiny_db.titles("Q17") == {"ar": "اليابان", "en": "Japan", "ja": "日本"}
    e = tiny_db.entity("Q17")
    assert e.kind == "country" and e.labels["ja"] == "日本" and e.aliases["en"] == ("JP", "Nihon")
    assert e.name("sw") == "Japan"  # falls back to English
    assert "Q17" in tiny_db and "Q999" not in tiny_db
    with pytest.raises(NotFoundError, match="Q999"):
        tiny_db.entity("Q999")
    assert tiny_db.get("Q999") is None
    assert tiny_db.labels(["Q17", "Q1490", "Q35"], "ja") == {"Q17": "日本", "Q1490": "東京"}
    assert tiny_db.label("Q35", "ja", fallback=("en",)) == "Denmark"


def test_facts_properties_templates(tiny_db):
    assert tiny_db.objects("Q17", "P36") == ["Q1490"]
    assert tiny_db.subjects("P36") == ["Q17", "Q35"]
    assert [f.subject for f in tiny_db.facts(object="Q1490")] == ["Q17"]
    assert tiny_db.properties() == ["P36", "P37"]
    assert tiny_db.property_label("P36", "ja") == "首都"
    assert tiny_db.template("P36", "ja").fill("日本", "東京") == "日本の首都は東京です。"
    with pytest.raises(NotFoundError, match="no template for P37 in 'en'"):
        tiny_db.template("P37", "en")
    with pytest.raises(NotFoundError, match="exist in: en, ja"):
        tiny_db.template("P36", "ar")
    with pytest.raises(kb.UnknownLanguageError, match="'de'"):
        tiny_db.template("P36", "de")


def test_mention_statistics(tiny_db):
    assert tiny_db.anchor_counts("en", "Tokyo") == [("Q1490", 100), ("Q1748", 2)]
    assert tiny_db.link_probability("en", "Tokyo") == pytest.approx(0.4)
    assert tiny_db.link_probability("en", "the") == 0.0  # counted, never linked: no division by zero
    assert tiny_db.link_probability("en", "unseen") is None
    assert tiny_db.entity_link_counts("Q17") == {"en": 500, "ja": 300}


def test_info_stats_and_provenance(tiny_db):
    info = tiny_db.info()
    assert info["format_version"] == kb.db.schema.FORMAT_VERSION
    assert info["provenance"] == {"builder": "tests"}
    assert info["sources"] == [{"kind": "test", "name": "conftest", "lang": "en", "note": "hand-written"}]
    assert info["entities"] == 5 and info["facts"] == 3
    en = info["languages"]["en"]
    assert en["titles"] == 5 and en["labels"] == 5 and en["aliases"] == 3 and en["redirects"] == 5
    assert en["facts"] == 3  # both ends labelled in English
    assert info["languages"]["ja"]["facts"] == 2  # Q17 P36 Q1490 and Q17 P37 Q5287
    assert info["languages"]["ar"] == {
        "entities": 1,
        "titles": 1,
        "labels": 0,
        "aliases": 0,
        "facts": 0,
        "templates": 0,
        "redirects": 0,
        "anchors": 0,
    }
    assert len(tiny_db) == 5


def test_facts_per_language_in_groups_of_languages(tmp_path, monkeypatch):
    # more label languages than fit one bit mask: the statistics come out the same in groups
    langs = ["ar", "de", "en", "fr", "ja"]
    path = tmp_path / "kb.sqlite"
    with EntityDB.create(path) as w:
        w.add_languages(langs)
        for i, key in enumerate(["Q1", "Q2", "Q3", "Q4"]):
            w.add_entity(key)
            for lang in langs[i:]:
                w.add_label(key, lang, f"{key} in {lang}")
        w.add_property("P1")
        for s, o in [("Q1", "Q2"), ("Q1", "Q4"), ("Q3", "Q2"), ("Q4", "Q1")]:
            w.add_fact(s, "P1", o)
    # by hand: a fact counts where both ends have a label
    labelled = {key: set(langs[i:]) for i, key in enumerate(["Q1", "Q2", "Q3", "Q4"])}
    expected = {
        lang: sum(
            lang in labelled[s] and lang in labelled[o]
            for s, o in [("Q1", "Q2"), ("Q1", "Q4"), ("Q3", "Q2"), ("Q4", "Q1")]
        )
        for lang in langs
    }
    conn = sqlite3.connect(path)
    try:
        for bits in (62, 2, 1):
            monkeypatch.setattr(kb.db.writer, "_MASK_BITS", bits)
            stats = kb.db.writer.compute_stats(conn)
            assert {lang: c["facts"] for lang, c in stats["languages"].items()} == expected, bits
    finally:
        conn.close()
    assert expected == {"ar": 0, "de": 1, "en": 2, "fr": 4, "ja": 4}


def test_build_is_atomic(tmp_path):
    path = tmp_path / "kb.sqlite"
    with pytest.raises(RuntimeError), EntityDB.create(path) as w:
        w.add_languages(["en"])
        w.add_entity("Q1")
        raise RuntimeError("interrupted")
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []  # no partial file left behind


def test_existing_file_is_never_overwritten_silently(tmp_path):
    path = write_tiny_db(tmp_path / "kb.sqlite")
    before = path.read_bytes()
    with pytest.raises(OutputExistsError, match="overwrite"), EntityDB.create(path) as w:
        w.add_entity("Q1")
    assert path.read_bytes() == before
    with EntityDB.create(path, overwrite=True) as w:
        w.add_languages(["en"])
    assert len(EntityDB(path)) == 0


@pytest.mark.parametrize(
    "key, value, error, message",
    [
        ("complete", "0", KbFormatError, "did not finish"),
        ("format_version", "99", SchemaVersionError, "format version 99.*reads version 1"),
    ],
)
def test_unfinished_or_other_version_is_rejected(tmp_path, key, value, error, message):
    path = write_tiny_db(tmp_path / "kb.sqlite")
    with sqlite3.connect(path) as c:
        c.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    with pytest.raises(error, match=message):
        EntityDB(path)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not an SQLite file"),
        (b"hello world, this is text", "not an SQLite file"),
        (b'{"[PAD]": 0}', "looks like JSON"),
    ],
)
def test_wrong_file_types(tmp_path, content, message):
    path = tmp_path / "kb.sqlite"
    path.write_bytes(content)
    with pytest.raises(KbFormatError, match=message):
        EntityDB(path)


def test_missing_file_directory_and_foreign_sqlite(tmp_path):
    with pytest.raises(KbFormatError, match="no such file"):
        EntityDB(tmp_path / "nope.sqlite")
    with pytest.raises(KbFormatError, match="is a directory"):
        EntityDB(tmp_path)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t(x)")
    with pytest.raises(KbFormatError, match="SQLite file but not an mluke entity database"):
        EntityDB(other)


def test_a_vocabulary_is_not_a_database(tmp_path, tiny_db):
    vocab = kb.EntityVocab.build(tiny_db, tmp_path / "v.sqlite", min_languages=1)
    with pytest.raises(KbFormatError, match="holds 'mluke-entity-vocab'"):
        EntityDB(vocab.path)


def test_writer_validates_keys_pids_templates_languages(tmp_path):
    with pytest.raises(KbFormatError, match="not an entity key"), EntityDB.create(tmp_path / "a.sqlite") as w:
        w.add_entity("Tokyo")
    with pytest.raises(KbFormatError, match="not a Wikidata property id"):
        with EntityDB.create(tmp_path / "b.sqlite") as w:
            w.add_fact("Q1", "capital", "Q2")
    with pytest.raises(kb.TemplateError, match="template P36/en"), EntityDB.create(tmp_path / "c.sqlite") as w:
        w.add_template("P36", "en", "The capital of [X].")
    with pytest.raises(kb.UnknownLanguageError), EntityDB.create(tmp_path / "d.sqlite") as w:
        w.add_languages(["English"])
    assert not any(tmp_path.iterdir())


def _count_lookups(db: EntityDB) -> int:
    return sum(len(db.lookup("en", name)) for name in ["Japan", "Tokyo", "Nippon", "Denmark"] * 50)


def test_pickle_and_many_processes_read_at_once(tiny_db):
    clone = pickle.loads(pickle.dumps(tiny_db))
    assert clone.lookup("en", "Japan") == tiny_db.lookup("en", "Japan")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_count_lookups, [tiny_db] * 4)
    assert results == [_count_lookups(tiny_db)] * 4 == [250] * 4


def test_copied_database_opens_anywhere(tmp_path, tiny_db):
    copy = tmp_path / "copy" / "kb.sqlite"
    copy.parent.mkdir()
    shutil.copy(tiny_db.path, copy)
    assert EntityDB(copy).lookup("ja", "日本")[0].key == "Q17"
    assert json.loads(EntityDB(copy).meta["provenance"]) == {"builder": "tests"}
