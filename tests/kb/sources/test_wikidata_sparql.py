"""``mluke kb add DB --relation P740``: a relation's facts from a SPARQL endpoint (here a local fake that answers
in the SPARQL 1.1 JSON results format, as query.wikidata.org does)."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

import kb
from kb.sources.wikidata_sparql import add_relation
from mluke.cli import app

E = "http://www.wikidata.org/entity/"


def _uri(qid):
    return {"type": "uri", "value": E + qid}


def _lit(value, lang):
    return {"xml:lang": lang, "type": "literal", "value": value}


FACTS = [("Q45188", "Q1490"), ("Q1143358", "Q1490"), ("Q21077", "Q84")]  # bands formed in Tokyo / London
LABELS = {
    "Q45188": {"en": "X Japan", "ja": "X JAPAN"},
    "Q1143358": {"en": "Buck-Tick", "ja": "BUCK-TICK"},
    "Q21077": {"en": "The Rolling Stones"},
    "Q1490": {"en": "Tokyo", "ja": "東京都"},
    "Q84": {"en": "London", "ja": "ロンドン"},
}
TITLES = {
    "Q45188": {"en": "X Japan", "ja": "X JAPAN"},
    "Q1490": {"en": "Tokyo", "ja": "東京都"},
    "Q84": {"en": "London"},
}


def _answer(query: str) -> dict:
    if "wdt:P740" in query:
        limit = int(query.rsplit("LIMIT", 1)[1])
        rows = [{"s": _uri(s), "o": _uri(o)} for s, o in FACTS][:limit]
        return {"head": {"vars": ["s", "o"]}, "results": {"bindings": rows}}
    if "wd:P740 rdfs:label" in query:
        rows = [{"l": _lit("location of formation", "en")}, {"l": _lit("結成地", "ja")}]
        return {"head": {"vars": ["l"]}, "results": {"bindings": rows}}
    asked = [v.removeprefix("wd:") for v in query.split("VALUES ?e {", 1)[1].split("}", 1)[0].split()]
    if "schema:about" in query:
        rows = [
            {"e": _uri(k), "site": {"type": "uri", "value": f"https://{lang}.wikipedia.org/"}, "t": _lit(t, lang)}
            for k in asked
            for lang, t in TITLES.get(k, {}).items()
        ]
        return {"head": {"vars": ["e", "site", "t"]}, "results": {"bindings": rows}}
    rows = [{"e": _uri(k), "l": _lit(v, lang)} for k in asked for lang, v in LABELS.get(k, {}).items()]
    rows.append({"e": _uri("Q1490"), "l": _lit("Tokio", "de")})  # a language not asked for: left out
    return {"head": {"vars": ["e", "l"]}, "results": {"bindings": rows}}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        params = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        assert params["format"] == ["json"] and "sparql-results+json" in self.headers["Accept"]
        body = json.dumps(_answer(params["query"][0])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def endpoint():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/sparql"
    httpd.shutdown()


def _rows(path, sql):
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute(sql).fetchall())


def test_a_relation_with_labels_and_titles_in_the_asked_languages(tmp_path, endpoint):
    path = tmp_path / "kb.sqlite"
    report = add_relation(path, "P740", limit=2000, langs=["ja", "en"], endpoint=endpoint)
    assert (report.facts, report.entities) == (3, 5) and not report.notes
    db = kb.EntityDB(path)
    assert set(db.languages) == {"ja", "en"}
    assert _rows(path, "SELECT subject, property, object FROM facts") == sorted((s, "P740", o) for s, o in FACTS)
    assert db.resolve_title("ja", "東京都") == "Q1490" and db.resolve_title("en", "London") == "Q84"
    assert ("ja", "BUCK-TICK", "Q1143358") in _rows(path, "SELECT lang, name, entity FROM names")
    assert not [r for r in _rows(path, "SELECT lang FROM names") if r == ("de",)]
    assert _rows(path, "SELECT pid, lang, label FROM property_labels WHERE pid = 'P740'") == [
        ("P740", "en", "location of formation"),
        ("P740", "ja", "結成地"),
    ]
    source = _rows(path, "SELECT kind, name, detail FROM sources WHERE kind = 'wikidata-sparql'")
    assert json.loads(source[0][2]) == {"langs": ["ja", "en"], "limit": 2000, "relation": "P740"}


def test_the_limit_bounds_the_facts_and_says_so(tmp_path, endpoint):
    report = add_relation(tmp_path / "kb.sqlite", "P740", limit=2, langs=["en"], endpoint=endpoint)
    assert report.facts == 2 and report.notes == ["the limit of 2 facts was reached: the relation may have more"]


def test_without_a_network_nothing_is_written_and_the_error_says_what_to_do(tmp_path):
    with socket.socket() as s:  # a port on which nobody listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kb.sqlite"
    with pytest.raises(kb.MlukeError, match=r"could not reach the Wikidata query service.*mluke kb build"):
        add_relation(path, "P740", langs=["en"], endpoint=f"http://127.0.0.1:{port}/sparql")
    assert not path.exists()
    with pytest.raises(kb.MlukeError, match="expected a Wikidata property id"):
        add_relation(path, "Q17", endpoint=f"http://127.0.0.1:{port}/sparql")


def test_cli(tmp_path, endpoint):
    path = tmp_path / "kb.sqlite"
    args = ["kb", "add", str(path), "--relation", "P740", "--limit", "2000", "--langs", "ja,en", "--endpoint", endpoint]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "P740: 3 facts, 5 entities" in result.output
    both = CliRunner().invoke(app, ["kb", "add", str(path), "Q17", "--relation", "P740", "--endpoint", endpoint])
    assert both.exit_code != 0 and "either ids or --relation" in both.output
