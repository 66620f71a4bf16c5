"""Concurrent use is safe: readers in several processes while entities are updated (``mluke kb add``
and :func:`kb.add_entities`), and two builds of one database at the same time."""

from __future__ import annotations

import json
import multiprocessing
import re
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import kb
from tests.jobs import start, wait_for
from tests.kb.sources.dump_fixtures import write_wikidata
from tests.kb_builds import db_rows, kb_build_args, tree_bytes, write_grown_dumps
from tests.wal import landed, read_wal

pytest.importorskip("wikidata")

LANGS = ("ar", "en", "ja")
READERS = 3
UPSERTS = 100  # by the Python API, in one process; plus two `mluke kb add` runs at the same time
NAMES = {
    "Q1490": {"en": "Tokyo", "ja": "東京都", "ar": "طوكيو"},  # in the fixture database
    "Q35765": {"en": "Osaka", "ja": "大阪市", "ar": "أوساكا"},
}  # added by the first update
VERSION = re.compile(r" v(\d+)$")


# -- a Wikidata server whose answers change with every request ------------------------------------------------------
def _entity(qid: str, version: int) -> dict:
    """Version ``version`` of ``qid``: every title, label and alias ends with " v<version>", so that a
    reader can tell whether what it read of an entity comes from one update."""
    names = {lang: f"{name} v{version}" for lang, name in NAMES[qid].items()}
    claim = {
        "mainsnak": {
            "snaktype": "value",
            "property": "P17",
            "datatype": "wikibase-item",
            "datavalue": {"value": {"entity-type": "item", "numeric-id": 17, "id": "Q17"}, "type": "wikibase-entityid"},
        },
        "type": "statement",
        "rank": "normal",
    }
    return {
        "entities": {
            qid: {
                "type": "item",
                "id": qid,
                "labels": {l: {"language": l, "value": v} for l, v in names.items()},
                "aliases": {"en": [{"language": "en", "value": f"{NAMES[qid]['en']} alias v{version}"}]},
                "descriptions": {},
                "claims": {"P17": [claim]},
                "sitelinks": {
                    f"{l}wiki": {
                        "site": f"{l}wiki",
                        "title": v,
                        "badges": [],
                        "url": f"https://{l}.wikipedia.org/wiki/{v.replace(' ', '_')}",
                    }
                    for l, v in names.items()
                },
            }
        }
    }


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        qid = self.path.rsplit("/", 1)[-1].removesuffix(".json")
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.version += 1  # type: ignore[attr-defined]
            version = self.server.version  # type: ignore[attr-defined]
        body = json.dumps(_entity(qid, version)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.version, httpd.lock = 0, threading.Lock()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


# -- readers and a writer, each in its own process ---------------------------------------------------------------------
def _check_entity(e: kb.db.Entity | None, original: dict | None) -> str | None:
    """What is wrong with ``e`` as read (None: nothing): it must be the database's original entity or one
    whole version written by one update (titles, labels and the alias in every language, all one version)."""
    if e is None:
        return None if original is None else "vanished"
    seen = {"titles": e.titles, "labels": e.labels, "aliases": {l: a[0] for l, a in e.aliases.items() if len(a) == 1}}
    if seen == original:
        return None
    versions = {m.group(1) if (m := VERSION.search(v)) else None for part in seen.values() for v in part.values()}
    complete = set(e.titles) == set(e.labels) == set(LANGS) and list(e.aliases) == ["en"] and len(e.aliases["en"]) == 1
    if len(versions) != 1 or None in versions or not complete:
        return f"half an update: {seen}"
    return None


def _reader(path: str, ready, stop, results) -> None:  # in a reader process
    queries, errors, bad = 0, [], []
    originals: dict[str, dict | None] = {}
    db = kb.EntityDB(path)
    try:
        for key in NAMES:
            e = db.get(key)
            originals[key] = (
                None
                if e is None
                else {"titles": e.titles, "labels": e.labels, "aliases": {l: a[0] for l, a in e.aliases.items()}}
            )
        ready.release()
        n = 0
        while not stop.is_set():
            n += 1
            try:
                if n % 20 == 0:  # opening reads the metadata (statistics) an update rewrites
                    db.close()
                    db = kb.EntityDB(path)
                    if len(db) < 5:
                        bad.append(f"statistics: {len(db)} entities")
                for key in NAMES:
                    problem = _check_entity(db.get(key), originals[key])
                    queries += 1
                    if problem:
                        bad.append(f"{key}: {problem}")
                    elif originals[key] is None and key in db:
                        originals[key] = {}  # added: from now on it must stay
                if [m.key for m in db.lookup("en", "Japan")] != ["Q17"]:
                    bad.append(f"lookup Japan: {db.lookup('en', 'Japan')}")
                if ("P17", "Q17") not in {(f.property, f.object) for f in db.facts(subject="Q1490")}:
                    bad.append(f"facts of Q1490: {db.facts(subject='Q1490')}")
                if db.objects("Q17", "P36") != ["Q1490"]:
                    bad.append(f"capital of Japan: {db.objects('Q17', 'P36')}")
                queries += 3
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        db.close()
        results.put(
            {"queries": queries, "errors": errors[:5], "n_errors": len(errors), "bad": bad[:5], "n_bad": len(bad)}
        )


def _writer(path: str, url: str, n: int, results) -> None:  # in the writer process
    done, errors = 0, []
    for _ in range(n):
        try:
            kb.add_entities(path, list(NAMES), base_url=url)
            done += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    results.put({"upserts": done, "errors": errors[:5], "n_errors": len(errors)})


def _build(folder):
    """The database both `kb add` tests update: built from a small Wikidata dump in ``folder``."""
    path = folder / "kb.sqlite"
    wikidata = write_wikidata(folder / "latest-all.json")
    kb.build_from_dumps(
        path, wikidata=wikidata, languages=LANGS, properties=("P17", "P36", "P37"), workers=1, progress=False
    )
    return path


def test_readers_never_fail_nor_see_half_an_update(tmp_path, server):
    path = _build(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    ready, stop, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    readers = [ctx.Process(target=_reader, args=(str(path), ready, stop, results)) for _ in range(READERS)]
    for r in readers:
        r.start()
    for _ in readers:
        assert ready.acquire(timeout=60)
    writer = ctx.Process(target=_writer, args=(str(path), server, UPSERTS, results))
    writer.start()
    cli = [
        start(["kb", "add", str(path), *NAMES, "--base-url", server], log=tmp_path / f"add-{n}.log") for n in range(2)
    ]
    for job in cli:
        job.check()
    writer.join(120)
    stop.set()
    for r in readers:
        r.join(60)
    reports = [results.get(timeout=10) for _ in range(READERS + 1)]
    wrote = next(r for r in reports if "upserts" in r)
    read = [r for r in reports if "queries" in r]
    print(
        f"{sum(r['queries'] for r in read):,} reader queries in {READERS} processes, {wrote['upserts']} + "
        f"{len(cli)} upserts, reader errors {sum(r['n_errors'] for r in read)}, inconsistent reads "
        f"{sum(r['n_bad'] for r in read)}, writer errors {wrote['n_errors']}"
    )
    assert wrote["upserts"] == UPSERTS and not wrote["errors"], wrote
    for r in read:
        assert not r["errors"] and not r["bad"], r
        assert r["queries"] > 100
    with kb.EntityDB(path) as db:
        assert _check_entity(db.entity("Q1490"), None) is None and db.stats["entities"] == 6
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# -- two builds of one database ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    return write_grown_dumps(tmp_path_factory.mktemp("dumps"))


@pytest.mark.parametrize("when", ["together", "while the first works"])
def test_two_builds_of_one_database_one_wins(tmp_path, dumps, when):
    """Two `mluke kb build -o kb.sqlite` at once, or the second while the first is reading the Wikipedia
    dumps: one builds the database, the other stops at once with a clear message; the database and corpus
    are those a single build writes."""
    ref = tmp_path / "ref"
    ref.mkdir()
    start(kb_build_args(ref, dumps), log=tmp_path / "ref.log").check()
    run = tmp_path / "run"
    run.mkdir()
    first = start(kb_build_args(run, dumps), log=tmp_path / "first.log")
    if when != "together":
        assert wait_for((run / "kb.sqlite.build" / "wiki-ar.sqlite").exists, first)
    second = start(kb_build_args(run, dumps), log=tmp_path / "second.log")
    codes = sorted([(first.wait(), "first"), (second.wait(), "second")])
    loser = first if codes[1][1] == "first" else second
    assert [c for c, _ in codes] == [0, 1], (first.output(), second.output())
    assert "another build of this database is running" in loser.output(), loser.output()
    print(f"{when}: the {codes[0][1]} won; the {codes[1][1]} said: {loser.output().strip()}")
    assert db_rows(run / "kb.sqlite") == db_rows(ref / "kb.sqlite")
    assert tree_bytes(run / "kb.corpus") == tree_bytes(ref / "kb.corpus")
    assert sorted(p.name for p in run.iterdir()) == ["kb.corpus", "kb.sqlite"]


def test_a_database_that_appeared_meanwhile_is_not_replaced(tmp_path):
    """Any database build (the embedded one, a vocabulary...): if another process put a file at the output
    while this one was building, the build fails and leaves that file alone."""
    path = tmp_path / "kb.sqlite"
    with pytest.raises(kb.errors.OutputExistsError, match="appeared while"), kb.EntityDB.create(path) as w:
        w.add_languages(["en"])
        path.write_text("the other build's")
    assert path.read_text() == "the other build's" and not list(tmp_path.glob("*.partial-*"))
    with kb.EntityDB.create(path, overwrite=True) as w:
        w.add_languages(["en"])
    assert kb.EntityDB(path).languages == ("en",)


#: Run in `mluke kb add` before main(): a page cache of a few pages, so that its transaction writes pages to
#: the log as it goes (not all at its commit), and a 10 ms pause per SQL statement: the window between its
#: first page in the log and its commit frame becomes wide enough for the test to kill inside it. Neither
#: changes what the command writes.
SLOW_COMMIT = """
import time
import kb.db.database as _database
_open = _database.open_for_update
def _slow_open(path):
    conn = _open(path)
    conn.execute("PRAGMA cache_size = 2")
    conn.set_trace_callback(lambda _sql: time.sleep(0.01))
    return conn
_database.open_for_update = _slow_open
"""
#: Where each `mluke kb add` run is killed: as soon as the log grows (SQLite writes the log's header first, so
#: this may land before any page), then three times once the run has uncommitted pages in the log.
KILLS = ("log grows", "mid-commit", "mid-commit", "mid-commit")


def _snapshot(e: kb.db.Entity | None) -> tuple | None:
    return None if e is None else (e.titles, e.labels, e.aliases)


def _uncommitted(wal, prior):
    """A condition: the log holds pages of a transaction begun after ``prior`` and not committed."""

    def check() -> bool:
        state = read_wal(wal)
        return state.frames > state.committed and (state.salt != prior.salt or state.frames > prior.frames)

    return check


def test_kb_add_killed_midway_leaves_a_whole_version(tmp_path, server):
    """`mluke kb add` killed while it commits (pages of its transaction in the write-ahead log, its commit
    frame not): readers go on reading, and what they read is an entity from before the update or after it,
    never between. Where each kill landed is read back from the log itself (:mod:`tests.wal`)."""
    path = _build(tmp_path)
    original = kb.EntityDB(path).entity("Q1490")
    before = {"titles": original.titles, "labels": original.labels, "aliases": {}}
    wal = tmp_path / "kb.sqlite-wal"
    reader = kb.EntityDB(path)  # open all along
    outcomes = []
    for n, plan in enumerate(KILLS):
        prior = read_wal(wal)
        committed = {key: _snapshot(reader.get(key)) for key in NAMES}
        job = start(
            ["kb", "add", str(path), *NAMES, "--base-url", server],
            log=tmp_path / f"add-{n}.log",
            prelude=SLOW_COMMIT if plan == "mid-commit" else "",
        )
        if plan == "mid-commit":
            condition = _uncommitted(wal, prior)
        else:
            size = wal.stat().st_size if wal.exists() else 0
            condition = lambda: wal.exists() and wal.stat().st_size > size  # noqa: E731
        killed = wait_for(condition, job, interval=0.0005) and job.kill()
        after = read_wal(wal)
        where = landed(prior, after) if killed else f"finished ({job.wait()})"
        outcomes.append(f"{where} ({after.frames - after.committed} uncommitted of {after.frames} pages)")
        if plan == "mid-commit":
            assert where == "mid-commit", (where, prior, after, job.output())
        for db in (reader, kb.EntityDB(path)):
            assert _check_entity(db.get("Q1490"), before) is None
            assert _check_entity(db.get("Q35765"), None) is None
            if where in ("before writing", "mid-commit"):  # nothing of the killed transaction is seen
                assert {key: _snapshot(db.get(key)) for key in NAMES} == committed
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    print("kb add kills:", outcomes)
    assert sum(o.startswith("mid-commit") for o in outcomes) >= 3
    start(["kb", "add", str(path), *NAMES, "--base-url", server], log=tmp_path / "last.log").check()
    assert VERSION.search(kb.EntityDB(path).entity("Q1490").labels["en"])
    reader.close()


def test_the_log_reader_tells_uncommitted_pages_from_committed_ones(tmp_path):
    """:func:`tests.wal.read_wal` on a real SQLite log: pages a transaction spilled before its commit count as
    uncommitted, its commit frame commits them, and a fresh log generation is told apart by its salts."""
    path = tmp_path / "t.sqlite"
    wal = tmp_path / "t.sqlite-wal"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (x)")
    first = read_wal(wal)
    assert first.frames == first.committed > 0
    conn.execute("PRAGMA cache_size = 2")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES (zeroblob(200000))")
    spilled = read_wal(wal)
    assert spilled.salt == first.salt and spilled.frames > spilled.committed == first.committed
    assert landed(first, spilled) == "mid-commit"
    conn.execute("COMMIT")
    done = read_wal(wal)
    assert done.frames == done.committed > spilled.frames and landed(spilled, done) == "after its commit"
    assert landed(done, done) == "before writing"
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert read_wal(wal) == (None, 0, 0)
    conn.execute("INSERT INTO t VALUES (1)")
    again = read_wal(wal)
    assert again.salt != done.salt and landed(done, again) == "after its commit"
    conn.close()
