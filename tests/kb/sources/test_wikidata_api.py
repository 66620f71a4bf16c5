"""``kb.add_entities`` / ``mluke kb add`` against a local server with recorded Wikidata responses."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kb
from mluke.cli import app
from tests.kb.sources.dump_fixtures import db_rows, write_wikidata

pytest.importorskip("wikidata")


def _entity_data(entity: dict) -> dict:
    """A Special:EntityData/<id>.json response: ``{"entities": {id: entity}}``, sitelinks with urls."""
    entity = json.loads(json.dumps(entity))
    for site, link in entity.get("sitelinks", {}).items():
        link["url"] = f"https://{site[:-4]}.wikipedia.org/wiki/{link['title'].replace(' ', '_')}"
    return {"entities": {entity["id"]: entity}}


def _item(qid: str, labels: dict, sitelinks: dict, claims: dict | None = None) -> dict:
    return {
        "pageid": 1,
        "ns": 0,
        "title": qid,
        "lastrevid": 2,
        "modified": "2024-05-01T00:00:00Z",
        "type": "item",
        "id": qid,
        "labels": {l: {"language": l, "value": v} for l, v in labels.items()},
        "descriptions": {"en": {"language": "en", "value": "test"}},
        "aliases": {},
        "claims": claims or {},
        "sitelinks": {s: {"site": s, "title": t, "badges": []} for s, t in sitelinks.items()},
    }


def _claim(pid: str, qid: str) -> dict:
    return {
        "mainsnak": {
            "snaktype": "value",
            "property": pid,
            "hash": "h",
            "datatype": "wikibase-item",
            "datavalue": {
                "value": {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid},
                "type": "wikibase-entityid",
            },
        },
        "type": "statement",
        "id": f"{qid}$1",
        "rank": "normal",
    }


#: Osaka's id, labels and sitelinks
OSAKA = ("Q35765", {"en": "Osaka", "ja": "大阪市"}, {"enwiki": "Osaka", "jawiki": "大阪市"})
RESPONSES = {
    # Tokyo, renamed in ja and with a new label; capital-of claim to Japan
    "Q1490": _entity_data(
        _item(
            "Q1490",
            {"en": "Tokyo", "ja": "東京都", "ar": "طوكيو"},
            {"enwiki": "Tokyo", "jawiki": "東京都", "arwiki": "طوكيو", "commonswiki": "Tokyo"},
            {"P1376": [_claim("P1376", "Q17")], "P17": [_claim("P17", "Q17")]},
        )
    ),
    # a new item: Osaka, in Japan
    "Q35765": _entity_data(_item(*OSAKA, {"P17": [_claim("P17", "Q17")], "P31": [_claim("P31", "Q515")]})),
    # Q999 was merged into Q35765: the server answers with Q35765's data
    "Q999": _entity_data(_item(*OSAKA, {"P17": [_claim("P17", "Q17")]})),
    # no Wikipedia article in the database's languages
    "Q5000": _entity_data(_item("Q5000", {"en": "A commons-only thing"}, {"commonswiki": "Thing"})),
    "P1376": {
        "entities": {
            "P1376": {
                "type": "property",
                "datatype": "wikibase-item",
                "id": "P1376",
                "labels": {"en": {"language": "en", "value": "capital of"}, "ja": {"language": "ja", "value": "首都"}},
                "descriptions": {},
                "aliases": {},
                "claims": {},
            }
        }
    },
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        prefix = "/wiki/Special:EntityData/"
        name = self.path[len(prefix) : -len(".json")] if self.path.startswith(prefix) else ""
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        if name in RESPONSES:
            body, code = json.dumps(RESPONSES[name]).encode(), 200
        elif name.startswith(("Q", "P")) and name[1:].isdigit():
            body, code = b"<html>Not Found: No entity with ID " + name.encode() + b"</html>", 404
        else:
            body, code = b"Invalid ID", 400
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if code == 200 else "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    dump = write_wikidata(tmp_path / "latest-all.json")
    kb.build_from_dumps(
        tmp_path / "kb.sqlite",
        wikidata=dump,
        languages=("ar", "en", "ja"),
        properties=("P17", "P36", "P37"),
        workers=1,
        progress=False,
    )
    return tmp_path / "kb.sqlite"


def test_add_and_refresh_entities(db_path, server):
    httpd, url = server
    report = kb.add_entities(db_path, ["Q1490", "Q35765", "P1376"], base_url=url)
    assert report.added == ["Q35765"] and report.refreshed == ["Q1490"] and report.properties == ["P1376"]
    assert "/wiki/Special:EntityData/Q35765.json" in httpd.requests
    with kb.EntityDB(db_path) as db:
        assert db.titles("Q1490") == {"ar": "طوكيو", "en": "Tokyo", "ja": "東京都"}  # commonswiki is not kept
        assert db.label("Q1490", "ja") == "東京都" and db.label("Q1490", "ar") == "طوكيو"
        assert db.resolve_title("ja", "大阪市") == "Q35765" and db.label("Q35765", "en") == "Osaka"
        # claims of the database's properties (P17) and of the property asked for (P1376); not P31
        assert db.objects("Q35765", "P17") == ["Q17"] and db.facts(subject="Q35765", property="P31") == []
        assert db.objects("Q1490", "P1376") == ["Q17"] and db.property_label("P1376", "ja") == "首都"
        assert db.objects("Q17", "P36") == ["Q1490"]  # facts of other entities stay
        assert db.stats["entities"] == 6 and db.stats["languages"]["ja"]["titles"] == 4
        assert db.sources()[-1]["kind"] == "wikidata-api" and db.sources()[-1]["ids"] == ["Q1490", "Q35765", "P1376"]


def test_redirected_and_skipped_ids_are_reported(db_path, server):
    _, url = server
    report = kb.add_entities(db_path, ["Q999", "Q5000"], base_url=url)
    assert report.redirected == {"Q999": "Q35765"} and report.added == ["Q35765"]
    assert report.skipped == ["Q5000"] and "skipped Q5000" in report.summary()
    with kb.EntityDB(db_path) as db:
        assert "Q35765" in db and "Q999" not in db and "Q5000" not in db


def test_unknown_id_changes_nothing(db_path, server):
    _, url = server
    before = db_rows(db_path)
    with pytest.raises(kb.NotFoundError, match=r"Wikidata has no entity 'Q123456789'.*404"):
        kb.add_entities(db_path, ["Q1490", "Q123456789"], base_url=url)
    with pytest.raises(kb.MlukeError, match="not Wikidata ids: 'Tokyo'"):
        kb.add_entities(db_path, ["Tokyo"], base_url=url)
    assert db_rows(db_path) == before


def test_network_error_changes_nothing(db_path):
    with socket.socket() as s:  # a port on which nobody listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    before = db_rows(db_path)
    with pytest.raises(kb.MlukeError, match=rf"could not fetch Q1490 from http://127.0.0.1:{port}/wiki/.*refused"):
        kb.add_entities(db_path, ["Q1490"], base_url=f"http://127.0.0.1:{port}/")
    assert db_rows(db_path) == before


def test_cli_add(db_path, server):
    _, url = server
    res = CliRunner().invoke(app, ["kb", "add", str(db_path), "Q35765", "--base-url", url])
    assert res.exit_code == 0 and "added 1" in res.output
    res = CliRunner().invoke(app, ["kb", "add", str(db_path), "Q404", "--base-url", url])
    assert res.exit_code == 1 and isinstance(res.exception, kb.NotFoundError)
