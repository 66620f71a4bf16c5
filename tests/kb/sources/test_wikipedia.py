"""The Wikipedia XML dump builder: wikitext, redirects, mention statistics, corpus, resuming."""

from __future__ import annotations

import bz2
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kb
import kb.sources.wikipedia
import kb.sources.wikipedia_counts
from kb.sources.wiki_links import LinkRules
from kb.sources.wikitext import parse_wikitext
from mluke.cli import app
from tests.kb.sources.dump_fixtures import (
    NAMESPACES,
    db_rows,
    write_wikidata,
    write_wikipedia,
)

LANGS = ("ar", "en", "fr", "ja")
EN = LinkRules("en", {v: k for k, v in NAMESPACES["en"].items()})
JA = LinkRules("ja", {v: k for k, v in NAMESPACES["ja"].items()})


def _links(text: str, rules: LinkRules = EN) -> tuple[str, list[tuple[str, str]]]:
    plain, links = parse_wikitext(text, rules)
    return plain, [(plain[s:e], t) for s, e, t in links]


# -- wikitext ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "wikitext, plain, links",
    [
        (
            "[[Tokyo]] and [[tokyo_tower|the tower]]",
            "Tokyo and the tower",
            [("Tokyo", "Tokyo"), ("the tower", "Tokyo tower")],
        ),
        (
            "[[Japan#History|history]] of [[Japan]]ese",
            "history of Japanese",
            [("history", "Japan"), ("Japanese", "Japan")],
        ),
        ("[[Tokyo (city)|]] pipe trick", "Tokyo pipe trick", [("Tokyo", "Tokyo (city)")]),
        ("[[File:A.jpg|thumb|a [[Tokyo]] caption]] x [[Category:C]] [[fr:Japon]]", "x", []),
        (
            "[[Help:Contents|help]] [[:Category:Japan]] [[#Top|top]] [[wikt:word]]",
            "help Category:Japan top wikt:word",
            [],
        ),
        ("{{Infobox|capital=[[Tokyo]]|x={{{1|{{y}}}}}}}text", "text", []),
        ('<!-- [[A]] -->a<ref name="r">[[B]]</ref> <ref name="r"/>b <math>[[c]]</math>', "a b", []),
        ("<nowiki>[[Tokyo]] {{x}}</nowiki> &amp; &lt;b&gt;", "[[Tokyo]] {{x}} & <b>", []),
        ("{| class=x\n| [[T]]\n|}\nafter", "after", []),
        ("== Head ==\n* '''bold''' [[A|''it'']]", "Head\nbold it", [("it", "A")]),
        ("[http://x.org site] and http://y.org", "site and http://y.org", []),
        ("broken {{x [[A]] ]] and [[B and <!-- open", "broken x A and B and", [("A", "A")]),
        (
            "😀 [[Face with Tears of Joy 😂|😂]] [[مصر]]",
            "😀 😂 مصر",
            [("😂", "Face with Tears of Joy 😂"), ("مصر", "مصر")],
        ),
    ],
)
def test_wikitext_to_text_and_links(wikitext, plain, links):
    assert _links(wikitext) == (plain, links)


def test_wikitext_uses_the_dumps_namespaces_and_no_kana_trail_in_japanese():
    text = "[[ファイル:x.png|thumb|[[東京]]]][[東京都]]は[[日本]]語"
    assert _links(text, JA) == ("東京都は日本語", [("東京都", "東京都"), ("日本", "日本")])
    assert _links("[[ファイル:x.png]] y") == ("ファイル:x.png y", [("ファイル:x.png", "ファイル:x.png")])


def test_wikitext_never_crashes_on_garbage():
    for junk in [
        "{{" * 5000,
        "[[a|" * 3000 + "]]" * 3000,
        "]]" * 20 + "[[" * 20,
        "{|\n" * 10,
        "<ref>" * 5,
        "[[|]]",
        "[[]]",
        "'''''",
        "<",
        "&#99999999;",
    ]:
        plain, links = parse_wikitext(junk + " tail", EN)
        assert isinstance(plain, str) and all(0 <= s < e <= len(plain) for s, e, _ in links)


# -- building ---------------------------------------------------------------------------------------
def _dumps(folder: Path, compression: str = "none") -> tuple[Path, list[Path]]:
    """The fixture dumps in ``folder`` (written once: a rewritten file is another input)."""
    folder.mkdir(exist_ok=True)
    ext = ".bz2" if compression == "bz2" else ""
    wd = folder / f"latest-all.json{ext}"
    if not wd.exists():
        write_wikidata(wd, compression=compression)
    wps = []
    for lang in ("en", "ja", "ar"):
        wps.append(folder / f"{lang}wiki-pages-articles.xml{ext}")
        if not wps[-1].exists():
            write_wikipedia(wps[-1], lang, compression=compression)
    return wd, wps


def _build(folder: Path, **kw) -> kb.BuildReport:
    wd, wps = _dumps(folder, kw.pop("compression", "none"))
    kw.setdefault("workers", 1)
    return kb.build_from_dumps(folder / "kb.sqlite", wikidata=wd, wikipedia=wps, languages=LANGS, progress=False, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, kb.BuildReport]:
    folder = tmp_path_factory.mktemp("wp") / "run"
    report = _build(folder, workers=2, compression="bz2")
    return folder, report


def test_redirects_titles_and_entities(built):
    folder, report = built
    with kb.EntityDB(folder / "kb.sqlite") as db:
        assert db.resolve_title("en", "Nippon") == "Q17"  # two hops
        assert db.resolve_title("en", "Loop A") is None  # a loop
        assert db.resolve_title("ja", "東京") == "Q1490"
        assert [(r[0], r[1]) for r in db._conn.execute("SELECT source, target FROM redirects WHERE lang = 'en'")] == [
            ("Loop A", "Loop B"),
            ("Loop B", "Loop A"),
            ("Nippon", "State of Japan"),
            ("State of Japan", "Japan"),
        ]
    en = report.wikipedia["en"]
    assert en["articles"] == 5 and en["redirects"] == 4 and en["other_namespace_pages"] == 1
    assert en["links"] == 15 and en["resolved_links"] == 12 and en["unresolved_links"] == 3
    assert en["redirect_loops_or_dangling"] == 2


def test_anchor_counts_link_probability_and_entity_links(built):
    folder, _ = built
    with kb.EntityDB(folder / "kb.sqlite") as db:
        assert db.anchor_counts("en", "Japan") == [("Q17", 4)]
        assert db.anchor_counts("en", "Japanese") == [("Q17", 1), ("Q5287", 1)]
        assert db.anchor_counts("en", "Nippon") == [("Q17", 1)]  # through the redirects
        assert db.anchor_counts("en", "Loop A") == [] and db.anchor_counts("en", "Tokyo Tower") == []
        assert db.anchor_counts("en", "😂") == [("Q2", 1)]
        assert db.anchor_counts("ja", "日本") == [("Q17", 2)] and db.anchor_counts("ar", "القاهرة") == [("Q85", 1)]
        surfaces = {
            s: (l, t)
            for s, l, t in db._conn.execute("SELECT surface, link_docs, text_docs FROM surfaces WHERE lang = 'en'")
        }
        # "Japan" occurs as a word in 5 pages ("Japanese" does not count), as a link in 4
        assert surfaces["Japan"] == (4, 5) and surfaces["Tokyo"] == (1, 3) and surfaces["Japanese"] == (1, 2)
        assert surfaces["the capital"] == (1, 2) and surfaces["😂"] == (1, 2) and surfaces["Cairo"] == (1, 2)
        assert db.link_probability("en", "Japan") == pytest.approx(0.8)
        ja = {
            s: (l, t)
            for s, l, t in db._conn.execute("SELECT surface, link_docs, text_docs FROM surfaces WHERE lang = 'ja'")
        }
        assert ja == {"東京": (1, 2), "日本": (2, 3), "日本語": (1, 1)}  # no word boundaries in Japanese
        assert db.entity_link_counts("Q17") == {"en": 6, "ja": 2, "ar": 1}
        assert db.entity_link_counts("Q1490") == {"en": 3, "ja": 1}
    vocab = kb.EntityVocab.build(kb.EntityDB(folder / "kb.sqlite"), folder / "vocab.sqlite", size=10, min_languages=2)
    assert [vocab.entry(i).key for i in range(4, len(vocab))] == ["Q17", "Q1490", "Q5287", "Q85", "Q2"][
        : len(vocab) - 4
    ]
    assert vocab.get_id("ja", "日本") == vocab.get_id("ar", "اليابان") == vocab.id_of_key("Q17")


def test_corpus_has_text_link_spans_and_entities(built):
    folder, _ = built
    corpus = kb.WikiCorpus(folder / "kb.corpus")
    assert corpus.languages == ("ar", "en", "ja")
    pages = {p.title: p for p in corpus.pages("en")}
    assert list(pages) == ["Japan", "Tokyo", "Face with Tears of Joy 😂", "Japanese language", "Cairo"]
    japan = pages["Japan"]
    assert japan.entity == "Q17" and japan.text.startswith("Japan is an island country.")
    got = [(japan.anchor(l), l.entity, l.title) for l in japan.links]
    assert got == [
        ("Tokyo", "Q1490", "Tokyo"),
        ("the capital", "Q1490", "Tokyo"),
        ("Japanese", "Q5287", "Japanese language"),
        ("Japanese", "Q17", "Japan"),
        ("history of Tokyo", "Q1490", "Tokyo"),
        ("Nippon", "Q17", "Japan"),
        ("Loop A", None, None),
        ("Missing page", None, "Missing page"),
        ("Cairo", "Q85", "Cairo"),
    ]
    tokyo = pages["Tokyo"]
    assert [(tokyo.anchor(l), l.entity) for l in tokyo.links] == [("Japan", "Q17"), ("😂", "Q2"), ("Tokyo Tower", None)]
    [ar_page, _] = list(corpus.pages("ar"))
    assert ar_page.title == "اليابان" and [ar_page.anchor(l) for l in ar_page.links] == ["طوكيو", "القاهرة"]
    assert corpus.manifest["database"] == "kb.sqlite" and corpus.manifest["languages"]["en"]["pages"] == 5
    assert not (folder / "kb.sqlite.build").exists()  # the work folder is gone


def test_surface_parts_give_the_same_counts(tmp_path, built):
    _build(tmp_path / "run", max_surfaces=3)  # many passes of at most 3 surfaces
    assert db_rows(tmp_path / "run" / "kb.sqlite", skip=("meta", "sources")) == db_rows(
        built[0] / "kb.sqlite", skip=("meta", "sources")
    )


class Interrupt(Exception):
    pass


def _corpus_bytes(folder: Path) -> dict[str, list]:
    corpus = kb.WikiCorpus(folder / "kb.corpus")
    return {lang: list(corpus.pages(lang)) for lang in corpus.languages}


def test_an_interrupted_build_continues_and_gives_the_same_database(tmp_path, monkeypatch):
    reference = tmp_path / "ref"
    _build(reference, chunk_bytes=2000)
    run = tmp_path / "run"

    # 1. stop after the first language's first step
    def stop_after(name: str) -> None:
        if name == "ar:read":
            raise Interrupt

    with pytest.raises(Interrupt):
        _build(run, chunk_bytes=2000, on_stage=stop_after)
    assert not (run / "kb.sqlite").exists() and (run / "kb.sqlite.build").is_dir()
    # 2. stop in the middle of reading the English dump (after two committed chunks)
    real = kb.sources.wikipedia.read_pages
    calls = {"n": 0}

    def flaky(block, lang, namespaces):
        if lang == "en":
            calls["n"] += 1
            if calls["n"] == 3:
                raise Interrupt
        return real(block, lang, namespaces)

    monkeypatch.setattr(kb.sources.wikipedia, "read_pages", flaky)
    with pytest.raises(Interrupt):
        _build(run, chunk_bytes=2000)
    monkeypatch.setattr(kb.sources.wikipedia, "read_pages", real)
    # 3. stop in the middle of counting the Japanese pages
    real_count = kb.sources.wikipedia_counts.count_pages

    def flaky_count(*args):
        if args[4] == "ja":  # the language argument
            raise Interrupt
        return real_count(*args)

    monkeypatch.setattr(kb.sources.wikipedia_counts, "count_pages", flaky_count)
    with pytest.raises(Interrupt):
        _build(run, chunk_bytes=2000)
    monkeypatch.setattr(kb.sources.wikipedia_counts, "count_pages", real_count)
    # 4. finish
    report = _build(run, chunk_bytes=2000)
    assert "wikidata" in report.resumed and "arwiki" in report.resumed and "enwiki" in report.resumed
    assert db_rows(run / "kb.sqlite") == db_rows(reference / "kb.sqlite")
    assert _corpus_bytes(run) == _corpus_bytes(reference)
    assert not (run / "kb.sqlite.build").exists()


def test_work_folder_of_another_build_is_not_resumed(tmp_path):
    def stop(name: str) -> None:
        raise Interrupt

    with pytest.raises(Interrupt):
        _build(tmp_path / "run", on_stage=stop)
    wd, wps = _dumps(tmp_path / "run")
    with pytest.raises(kb.KbFormatError, match="other inputs or options.*restart"):
        kb.build_from_dumps(
            tmp_path / "run" / "kb.sqlite", wikidata=wd, wikipedia=wps[:1], languages=LANGS, progress=False, workers=1
        )
    report = kb.build_from_dumps(
        tmp_path / "run" / "kb.sqlite",
        wikidata=wd,
        wikipedia=wps[:1],
        languages=LANGS,
        progress=False,
        workers=1,
        restart=True,
    )
    assert report.resumed == [] and list(report.wikipedia) == ["en"]


def test_work_folder_message_names_what_changed_and_what_restart_discards(tmp_path):
    run = tmp_path / "run"

    def stop(name: str) -> None:
        if name == "en:read":
            raise Interrupt

    with pytest.raises(Interrupt):
        _build(run, on_stage=stop)
    wd, wps = _dumps(run)
    with pytest.raises(kb.KbFormatError) as err:
        kb.build_from_dumps(
            run / "kb.sqlite", wikidata=wd, wikipedia=wps[:2], languages=LANGS, progress=False, workers=1
        )
    message = err.value.for_cli()
    assert "the arwiki dump left out" in message and "--restart" in message and "restart=True" not in message
    assert "the Wikidata stage (finished, " in message and "the enwiki stage (read, counting" in message


def test_a_repaired_truncated_dump_needs_no_restart(tmp_path, built):
    """A build that stopped on a truncated Wikipedia dump continues with the repaired file, keeping
    the finished stages and giving the same database as a build that never failed."""
    run = tmp_path / "run"
    wd, (en, ja, ar) = _dumps(run)
    good = en.read_bytes()
    en.write_bytes(good[:-40])
    with pytest.raises(kb.KbFormatError, match="ends before </mediawiki>"):
        kb.build_from_dumps(
            run / "kb.sqlite", wikidata=wd, wikipedia=[en, ja, ar], languages=LANGS, progress=False, workers=1
        )
    assert (run / "kb.sqlite.build" / "failed.json").exists() and not (run / "kb.sqlite").exists()
    en.write_bytes(good)  # the download repaired
    report = kb.build_from_dumps(
        run / "kb.sqlite", wikidata=wd, wikipedia=[en, ja, ar], languages=LANGS, progress=False, workers=1
    )
    assert "wikidata" in report.resumed and "enwiki" not in report.resumed
    assert report.notes and "Starting over: enwiki" in report.notes[0] and "kept: Wikidata" in report.notes[0]
    assert "note: the previous run stopped on a bad input" in report.summary()
    assert db_rows(run / "kb.sqlite", skip=("meta", "sources")) == db_rows(
        built[0] / "kb.sqlite", skip=("meta", "sources")
    )


def test_truncated_or_foreign_wikipedia_dumps_fail_clearly(tmp_path):
    wd, (en, ja, _) = _dumps(tmp_path)
    cut = tmp_path / "enwiki-cut.xml.bz2"
    cut.write_bytes(bz2.compress(en.read_bytes())[:-300])
    with pytest.raises(kb.KbFormatError, match=r"enwiki-cut\.xml\.bz2: the bz2 stream is truncated"):
        kb.build_from_dumps(tmp_path / "kb.sqlite", wikidata=wd, wikipedia=[cut], languages=LANGS, progress=False)
    assert not (tmp_path / "kb.sqlite").exists() and not list(tmp_path.glob("kb.sqlite.partial*"))
    shutil.rmtree(tmp_path / "kb.sqlite.build", ignore_errors=True)
    plain_cut = tmp_path / "enwiki-cut.xml"
    plain_cut.write_bytes(en.read_bytes()[:-40])
    with pytest.raises(kb.KbFormatError, match="ends before </mediawiki>"):
        kb.build_from_dumps(
            tmp_path / "kb.sqlite",
            wikidata=wd,
            wikipedia=[plain_cut],
            languages=LANGS,
            progress=False,
            workers=1,
            restart=True,
        )
    not_xml = tmp_path / "notes.xml"
    not_xml.write_text("hello")
    with pytest.raises(kb.KbFormatError, match="not a MediaWiki XML export"):
        kb.build_from_dumps(tmp_path / "kb.sqlite", wikidata=wd, wikipedia=[not_xml], progress=False)
    with pytest.raises(kb.UnknownLanguageError, match="'ja' Wikipedia, which is not among the chosen"):
        kb.build_from_dumps(tmp_path / "kb.sqlite", wikidata=wd, wikipedia=[ja], languages=("en",), progress=False)


def test_cli_build_from_dumps_then_vocab(tmp_path):
    wd, wps = _dumps(tmp_path)
    runner = CliRunner()
    args = [
        "kb",
        "build",
        "--wikidata",
        str(wd),
        *(x for p in wps for x in ("--wikipedia", str(p))),
        "-o",
        str(tmp_path / "kb.sqlite"),
        "--languages",
        ",".join(LANGS),
        "--workers",
        "1",
        "--quiet",
        "--corpus",
        str(tmp_path / "pages"),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "kept 5" in res.output and "enwiki: 5 articles, 4 redirects" in res.output
    assert (tmp_path / "pages" / "manifest.json").is_file()
    res = runner.invoke(
        app,
        [
            "kb",
            "vocab",
            str(tmp_path / "kb.sqlite"),
            "-o",
            str(tmp_path / "v.sqlite"),
            "--size",
            "3",
            "--min-languages",
            "2",
        ],
    )
    assert res.exit_code == 0 and "7 ids" in res.output
    res = runner.invoke(app, args)  # nothing is overwritten silently
    assert res.exit_code != 0 and "already exists" in str(res.exception)


def _gzip_members(data: bytes) -> list[tuple[bytes, bytes]]:
    """(member bytes, its content) of each gzip member of ``data``."""
    import zlib

    out = []
    while data:
        d = zlib.decompressobj(wbits=31)
        content = d.decompress(data)
        member, data = data[: len(data) - len(d.unused_data)], d.unused_data
        out.append((member, content))
    return out


def test_corpus_members_are_written_at_the_corpus_gzip_level(built):
    """Each member of a corpus part is the deterministic gzip of its lines at ``CORPUS_GZIP_LEVEL`` (mtime 0), so a
    rebuilt corpus is byte-identical and the level the docs give is the one used."""
    import gzip

    folder, _ = built
    parts = sorted((folder / "kb.corpus").rglob("part-*.jsonl.gz"))
    assert parts
    level = kb.sources.wikipedia_counts.CORPUS_GZIP_LEVEL
    for part in parts:
        members = _gzip_members(part.read_bytes())
        assert members
        for member, content in members:
            assert member == gzip.compress(content, compresslevel=level, mtime=0), part
