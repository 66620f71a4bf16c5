"""The Wikidata JSON dump builder: formats, what is kept, malformed lines, truncated files."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

import kb
import kb.sources.decompress
import kb.sources.dumps
from kb.db.titles import normalize_title
from kb.sources.wikidata import (
    Rows,
    WikidataOptions,
    canonical_title,
    convert_entity,
    extract,
)
from tests.kb.sources.dump_fixtures import (
    db_rows,
    wikidata_entities,
    wikidata_lines,
    write_wikidata,
)

LANGS = ("ar", "en", "fr", "ja")


def _build(tmp_path: Path, dump: Path, name: str = "kb.sqlite", **kw) -> kb.BuildReport:
    kw.setdefault("languages", LANGS)
    kw.setdefault("workers", 1)
    kw.setdefault("progress", False)
    return kb.build_from_dumps(tmp_path / name, wikidata=dump, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, kb.BuildReport]:
    tmp = tmp_path_factory.mktemp("wd")
    report = _build(tmp, write_wikidata(tmp / "latest-all.json"))
    return tmp / "kb.sqlite", report


def test_keeps_wikipedia_sitelinks_labels_aliases_and_claims(built):
    path, _ = built
    with kb.EntityDB(path) as db:
        assert set(db.keys()) == {"Q17", "Q1490", "Q5287", "Q85", "Q2"}
        assert db.titles("Q17") == {"ar": "اليابان", "en": "Japan", "fr": "Japon", "ja": "日本"}
        assert db.resolve_title("ja", "東京都") == "Q1490"
        assert db.resolve_title("ar", "القاهرة") == "Q85"  # right-to-left title
        assert db.resolve_title("en", "Face with Tears of Joy 😂") == "Q2"  # emoji outside the BMP
        assert db.label("Q17", "ja") == "日本" and db.label("Q1490", "ja") == "東京"
        assert db.entity("Q17").aliases == {"en": ("Nihon", "Nippon")}  # de is not a chosen language
        assert [m.key for m in db.lookup("en", "Nippon")] == ["Q17"]
        # item-valued claims of the chosen properties whose object is kept; not deprecated, not somevalue
        assert [(f.subject, f.property, f.object) for f in db.facts()] == [
            ("Q1490", "P17", "Q17"),
            ("Q17", "P36", "Q1490"),
            ("Q2", "P36", "Q1490"),
            ("Q17", "P37", "Q5287"),
        ]
        assert db.property_label("P36", "ja") == "首都"  # from the dump
        assert db.property_label("P17", "en") == "country"  # no property line in the dump: our label
        assert "P214" not in db.properties()  # not a chosen property
        assert db.template("P36", "ja").fill("日本", "[Y]") == "日本の首都は[Y]です。"
        with db._conn:
            sites = db._conn.execute("SELECT COUNT(*) FROM titles WHERE title LIKE 'Category:%'").fetchone()[0]
        assert sites == 0  # commonswiki, wikiquote, species, voyage are not Wikipedias


def test_report_counts_items_sitelinks_skipped_and_malformed_lines(built):
    path, report = built
    wd = report.wikidata
    assert wd["items"] == 7 and wd["kept_items"] == 5 and wd["skipped_items"] == 2
    assert wd["properties"] == 2 and wd["sitelinks"] == 4 + 2 + 2 + 2 + 1
    assert wd["malformed"] == 1
    [(line, message)] = wd["malformed_examples"]
    assert line == 7 and "expected one JSON entity per line" in message
    assert "7" in report.summary() and "malformed" in report.summary()
    with kb.EntityDB(path) as db:
        [src] = db.sources()
        assert src["kind"] == "wikidata-dump" and src["name"] == "latest-all.json" and src["malformed"] == 1
        assert db.provenance["languages"] == list(LANGS) and db.provenance["builder"] == "kb.build_from_dumps"


def test_claims_whose_object_is_not_in_the_database_are_counted_and_said(built, tmp_path):
    path, report = built
    # Q17 P31 Q6256: Q6256 is not in the dump (a partial dump); the other four claims make facts
    assert report.wikidata["facts"] == 4 and report.wikidata["facts_without_object"] == 1
    assert (
        "wikidata facts: kept 4; dropped 1 claims whose object is not in the database (not in the dump, "
        "e.g. a partial dump, or an item skipped for want of a Wikipedia article; all_items=True keeps those)"
    ) in report.summary()
    with kb.EntityDB(path) as db:
        assert len(list(db.facts())) == 4
        assert db.sources()[0]["facts_without_object"] == 1  # also in the database's provenance
    # an object that is an item without a Wikipedia article: dropped unless all_items keeps it
    entities = wikidata_entities()
    q17 = next(e for e in entities if e.get("id") == "Q17")
    q17["claims"]["P36"].append(
        {
            **q17["claims"]["P36"][0],
            "mainsnak": {
                **q17["claims"]["P36"][0]["mainsnak"],
                "datavalue": {
                    "value": {"entity-type": "item", "numeric-id": 300, "id": "Q300"},
                    "type": "wikibase-entityid",
                },
            },
        }
    )
    dump = tmp_path / "dump.json"
    dump.write_bytes(b"[\n" + b",\n".join(json.dumps(e, ensure_ascii=False).encode() for e in entities) + b"\n]\n")
    assert _build(tmp_path, dump).wikidata["facts_without_object"] == 2  # Q6256 and the skipped Q300
    kept = _build(tmp_path, dump, name="all.sqlite", all_items=True)
    assert kept.wikidata["facts_without_object"] == 1 and kept.wikidata["facts"] == 5
    assert "(not in the dump: a partial dump?)" in kept.summary()


@pytest.mark.parametrize("compression", ["bz2", "gzip"])
@pytest.mark.parametrize("external", [True, False], ids=["lbzip2-pigz", "python"])
def test_compressed_dumps_give_the_same_database(tmp_path, built, compression, external, monkeypatch):
    tool = {"bz2": "lbzip2", "gzip": "pigz"}[compression]
    if external and shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    if not external:
        monkeypatch.setattr(kb.sources.decompress, "external_tool", lambda c: None)
    dump = write_wikidata(tmp_path / "dump.json.x", compression=compression)  # the name says nothing
    with kb.sources.decompress.DumpStream(dump) as s:
        assert s.how == (tool if external else f"python {compression}")
    _build(tmp_path, dump, workers=2)
    # the same rows; only the input's name and size (in meta and sources) differ
    assert db_rows(tmp_path / "kb.sqlite", skip=("meta", "sources")) == db_rows(built[0], skip=("meta", "sources"))


def test_workers_reading_their_own_ranges_give_the_same_database(tmp_path, built):
    dump = write_wikidata(tmp_path / "latest-all.json")
    report = _build(tmp_path, dump, workers=2, chunk_bytes=900)  # many ranges, read by two processes
    assert report.wikidata["malformed_examples"][0][0] == 7
    assert db_rows(tmp_path / "kb.sqlite", skip=("meta", "sources")) == db_rows(built[0], skip=("meta", "sources"))


class Interrupt(Exception):
    pass


@pytest.mark.parametrize("compression", ["none", "bz2"])
def test_interrupted_wikidata_stage_continues_to_the_same_database(tmp_path, built, compression, monkeypatch):
    dump = write_wikidata(tmp_path / "latest-all.json", compression=compression)
    real, calls = kb.sources.dumps.parse_chunk, {"n": 0}

    def flaky(block, opts):
        calls["n"] += 1
        if calls["n"] == 3:  # two chunks are committed
            raise Interrupt
        return real(block, opts)

    monkeypatch.setattr(kb.sources.dumps, "parse_chunk", flaky)
    with pytest.raises(Interrupt):
        _build(tmp_path, dump, chunk_bytes=1500)
    monkeypatch.setattr(kb.sources.dumps, "parse_chunk", real)
    report = _build(tmp_path, dump, chunk_bytes=1500)
    assert report.resumed == ["wikidata"]
    assert report.wikidata["malformed_examples"][0][0] == 7 and report.wikidata["items"] == 7
    assert db_rows(tmp_path / "kb.sqlite", skip=("meta", "sources")) == db_rows(built[0], skip=("meta", "sources"))


def test_plain_dump_ranges_tile_the_file_at_line_ends(tmp_path):
    lines = [b"[", b'{"id":"Q1"},', b'{"id":"Q2","x":"' + b"y" * 200_000 + b'"},', b"{}", b"]"]
    path = tmp_path / "dump.json"
    path.write_bytes(b"\n".join(lines))  # no final line end
    data = path.read_bytes()
    for start, size in [(0, 10), (0, 1 << 20), (2, 7), (15, 100_000)]:
        ranges = [r for _, r in kb.sources.decompress.iter_ranges(path, start, size)]
        assert ranges[0].start == start and ranges[-1].end == len(data)
        assert all(a.end == b.start for a, b in itertools.pairwise(ranges))
        assert all(data[r.end - 1 : r.end] == b"\n" for r in ranges[:-1])  # whole lines only
        assert b"".join(r.read() for r in ranges) == data[start:]
        assert all(len(r) - size <= 200_020 for r in ranges)  # at most one line past the size
    assert [len(r.read().split(b"\n")) for _, r in kb.sources.decompress.iter_ranges(path, 0, 10)] == [3, 2, 2]


def test_truncated_bz2_is_fatal_and_leaves_no_database(tmp_path):
    dump = write_wikidata(tmp_path / "latest-all.json.bz2", compression="bz2")
    dump.write_bytes(dump.read_bytes()[:-200])
    with pytest.raises(kb.KbFormatError, match=r"latest-all\.json\.bz2: the bz2 stream is truncated or corrupt"):
        _build(tmp_path, dump)
    assert not (tmp_path / "kb.sqlite").exists()
    assert not list(tmp_path.glob("kb.sqlite.partial*"))
    with pytest.raises(kb.KbFormatError):
        kb.EntityDB(tmp_path / "kb.sqlite")


def test_truncated_plain_dump_is_fatal(tmp_path):
    dump = tmp_path / "latest-all.json"
    dump.write_bytes(b"\n".join(write_wikidata(dump).read_bytes().split(b"\n")[:5]) + b"\n")
    with pytest.raises(kb.KbFormatError, match=r"ends before the closing '\]'.*truncated"):
        _build(tmp_path, dump)
    assert not (tmp_path / "kb.sqlite").exists()


def test_existing_output_is_not_replaced(tmp_path):
    dump = write_wikidata(tmp_path / "latest-all.json")
    (tmp_path / "kb.sqlite").write_text("mine")
    with pytest.raises(kb.OutputExistsError):
        _build(tmp_path, dump)
    assert (tmp_path / "kb.sqlite").read_text() == "mine"


def test_properties_languages_and_all_items_options(tmp_path):
    dump = write_wikidata(tmp_path / "latest-all.json", malformed=False)
    report = _build(tmp_path, dump, languages=("ja",), properties=("P17",), all_items=True)
    assert report.wikidata.get("malformed", 0) == 0
    with kb.EntityDB(tmp_path / "kb.sqlite") as db:
        assert db.languages == ("ja",)
        assert "Q300" in db and "Q200" in db  # kept without sitelinks
        assert [(f.subject, f.object) for f in db.facts()] == [("Q1490", "Q17")]
        assert db.titles("Q17") == {"ja": "日本"}


def test_entity_repeated_in_the_dump_keeps_its_first_label_and_all_aliases(tmp_path):
    # A dump written while items were edited can hold an item twice; the first line's label wins.
    lines = wikidata_lines(malformed=False)
    again = json.loads(lines[3].rstrip(b","))  # Q17
    assert again["id"] == "Q17"
    again["labels"]["en"]["value"] = "Nippon-koku"
    again["aliases"] = {"en": [{"language": "en", "value": "Land of the Rising Sun"}]}
    lines.insert(-1, json.dumps(again, ensure_ascii=False).encode("utf-8") + b",")
    dump = tmp_path / "latest-all.json"
    dump.write_bytes(b"\n".join(lines) + b"\n")
    _build(tmp_path, dump, chunk_bytes=700)  # several chunks: the two lines land in different ones
    with kb.EntityDB(tmp_path / "kb.sqlite") as db:
        assert db.label("Q17", "en") == "Japan" and db.label("Q17", "ja") == "日本"
        assert db.entity("Q17").aliases == {"en": ("Land of the Rising Sun", "Nihon", "Nippon")}
        assert db.label("Q1490", "en") == "Tokyo"


def test_extraction_handles_api_shapes_and_empty_maps():
    opts = WikidataOptions(("en", "zh"), ("P36",))
    rows = Rows()
    entity = {
        "type": "item",
        "id": "Q9",
        "labels": {"zh-hans": {"language": "zh-hans", "value": "东京"}},
        "aliases": [],
        "claims": [],
        "sitelinks": {
            "zhwiki": {"site": "zhwiki", "title": "东京都"},
            "zhwikiquote": {"site": "zhwikiquote", "title": "x"},
        },
    }
    extract(convert_entity(entity, opts), opts, rows)
    assert rows.titles == {"zh": [("东京都", "Q9")]} and rows.labels == {"zh": [("东京", "Q9")]}
    assert not rows.aliases
    assert len(wikidata_entities()) == 9


def test_unknown_language_of_wikipedia_dump_and_bad_options(tmp_path):
    dump = write_wikidata(tmp_path / "latest-all.json")
    with pytest.raises(kb.UnknownLanguageError):
        _build(tmp_path, dump, languages=("xx_bad",))
    with pytest.raises(kb.KbFormatError, match="not a Wikidata property id"):
        _build(tmp_path, dump, properties=("capital",))
    with pytest.raises(kb.KbFormatError, match="no such file"):
        _build(tmp_path, tmp_path / "missing.json.bz2")


def test_sitelink_titles_are_normalised_like_links():
    # the fast path of canonical_title must agree with normalize_title on every title
    titles = [
        "Japan",
        "東京都",
        "tokyo",
        "Tokyo_Tower",
        "Tokyo  Tower",
        " Tokyo",
        "Tokyo ",
        "Foo\u3000Bar",
        "Foo\u00a0Bar",
        "Foo\tBar",
        "ßtraße",
        "ǅemal",
        "ǆemal",
        "émile",
        "Émile",
        "İstanbul",
        "ıdır",
        "😂 emoji",
        "",
        " ",
        "القاهرة",
        "a",
        "Ω",
        "ω",
        "Foo\u2028Bar",
        "Foo\x85Bar",
        "x_",
    ]
    for title in titles:
        assert canonical_title(title) == normalize_title(title), repr(title)
