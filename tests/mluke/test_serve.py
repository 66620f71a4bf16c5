"""``mluke serve``: the endpoints, batching, limits, bad input, the token, NIF, the drain on shutdown (the page's
browser test and the schema-driven fuzzer: test_serve_page.py, test_serve_fuzz.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

pytest.importorskip("fastapi")
import httpx
from fastapi.testclient import TestClient

from tests.mluke.serve_fixtures import EMOJI_TEXTS, gather, make_app, running_server

JAPAN = "geonames:1861060"


@pytest.fixture(scope="module")
def app(tiny_demo, embedded_db_path):
    return make_app(tiny_demo, embedded_db_path)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as c:
        yield c


def test_link_gives_offsets_in_characters_and_utf16_names_and_provenance(client):
    for lang, text in EMOJI_TEXTS.items():
        r = client.post("/link", json={"text": text, "lang": lang, "candidates": 2})
        assert r.status_code == 200, r.text
        body = r.json()
        mentions = body["results"][0]["mentions"]
        assert mentions, f"no mention found in {text!r}"
        utf16 = text.encode("utf-16-le")
        for m in mentions:
            assert text[m["start"] : m["end"]] == m["surface"]
            assert m["start_utf16"] == m["start"] + 1  # the emoji counts two in UTF-16
            assert utf16[2 * m["start_utf16"] : 2 * m["end_utf16"]].decode("utf-16-le") == m["surface"]
            assert set(m) >= {"key", "qid", "label", "name", "kind", "confidence", "nil", "candidates"}
            assert len(m["candidates"]) <= 2
        served = body["served_by"]
        assert served["kb"].endswith(".sqlite") and served["kb_built"] and served["model_fingerprint"]
        assert r.headers["x-mluke-kb"] == served["kb"]
    japan = list(client.post("/link", json={"text": EMOJI_TEXTS["en"]}).json()["results"][0]["mentions"])
    assert any(m["surface"] == "Japan" and m["kind"] == "country" for m in japan)


def test_batch_form_links_each_text_as_alone(client):
    texts = [EMOJI_TEXTS["en"], "Paris is in France."]
    together = client.post("/link", json={"texts": texts}).json()["results"]
    alone = [client.post("/link", json={"text": t}).json()["results"][0] for t in texts]
    assert [[(m["start"], m["key"]) for m in r["mentions"]] for r in together] == [
        [(m["start"], m["key"]) for m in r["mentions"]] for r in alone
    ]


async def _concurrent(app, n, text="Tokyo is the capital of Japan."):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        return await asyncio.gather(*(c.post("/link", json={"text": f"{text} {i}"}) for i in range(n)))


@pytest.mark.parametrize("batching", [True, False])
def test_requests_that_arrive_together_share_a_model_call(tiny_demo, embedded_db_path, batching):
    app = make_app(tiny_demo, embedded_db_path, batching=batching, gather_ms=20)
    service = app.state.service
    [responses] = gather(_concurrent(app, 8))
    assert [r.status_code for r in responses] == [200] * 8
    keys = {tuple(m["key"] for m in r.json()["results"][0]["mentions"]) for r in responses}
    assert len(keys) == 1  # the same answer in a batch as alone
    if batching:
        assert service.batcher.batches < 8, "8 requests sent together were not batched"
    else:
        assert service.batcher.batches == 8


def _block(service, seconds):
    """Keeps the model's thread busy for ``seconds`` (a long request in flight)."""
    return service.batcher.call(lambda: time.sleep(seconds))


def test_a_full_queue_answers_503_with_retry_after(tiny_demo, embedded_db_path):
    app = make_app(tiny_demo, embedded_db_path, queue_texts=2)
    service = app.state.service

    async def run():
        blocker = asyncio.ensure_future(_block(service, 0.5))
        await asyncio.sleep(0.05)
        responses = await _concurrent(app, 4)
        await blocker
        return responses

    [responses] = gather(run())
    codes = sorted(r.status_code for r in responses)
    assert 503 in codes and 200 in codes, codes
    refused = next(r for r in responses if r.status_code == 503)
    assert refused.headers["retry-after"] == "1" and "queue is full" in refused.json()["error"]


def test_a_request_past_the_time_limit_is_cancelled_with_504(tiny_demo, embedded_db_path):
    app = make_app(tiny_demo, embedded_db_path, timeout_s=0.2)
    service = app.state.service

    async def run():
        blocker = asyncio.ensure_future(_block(service, 0.6))
        await asyncio.sleep(0.05)
        [response] = await _concurrent(app, 1)
        await blocker
        return response, service.batcher.queued

    [(response, queued)] = gather(run())
    assert response.status_code == 504
    assert "timeout_s" in response.json()["error"] and "cancelled" in response.json()["error"]
    assert queued == 0  # it left the queue


BAD = [
    (b'{"text": ', 422, "body"),
    (b'{"text": "\xff\xfe"}', 400, "body"),
    (b"[1, 2]", 422, "body"),
    (json.dumps({"text": "Tokyo", "lang": "xx"}).encode(), 422, "lang"),
    (json.dumps({"text": ""}).encode(), 422, "text"),
    (json.dumps({"text": "   "}).encode(), 422, "text"),
    (json.dumps({"texts": []}).encode(), 422, "texts"),
    (json.dumps({"texts": ["a", 1]}).encode(), 422, "texts[1]"),
    (json.dumps({"text": 5}).encode(), 422, "text"),
    (json.dumps({"text": "a", "candidates": -1}).encode(), 422, "candidates"),
    (json.dumps({"text": "a", "candidates": 1000}).encode(), 413, "candidates"),
    (json.dumps({"text": "a", "method": "magic"}).encode(), 422, "method"),
    (json.dumps({"text": "a", "nil_threshold": 2}).encode(), 422, "nil_threshold"),
    (json.dumps({"text": "a", "lnag": "en"}).encode(), 422, "lnag"),
    (json.dumps({"text": "\ud800 Tokyo"}).encode(), 422, "text"),
    (json.dumps({"text": "a" * 200_000}).encode(), 413, "text"),
    (json.dumps({"text": "a" * (1 << 20)}).encode(), 413, "body"),
    (json.dumps({"texts": ["a"] * 100}).encode(), 413, "texts"),
]


@pytest.mark.parametrize("body, status, field", BAD, ids=[f"{s}-{f}-{i}" for i, (_, s, f) in enumerate(BAD)])
def test_bad_input_is_a_4xx_naming_the_field(client, body, status, field):
    r = client.post("/link", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    error = r.json()
    assert error["field"] == field and error["error"].startswith(field) and "\n" not in error["error"]


def test_bad_input_elsewhere(client):
    assert client.get("/entities/no-such-key").json()["field"] == "key"
    assert client.get("/entities/no-such-key").status_code == 404
    r = client.post("/candidates", json={"surface": "Paris", "k": -3})
    assert r.status_code == 422 and r.json()["field"] == "k"
    r = client.post("/disambiguate", json={"text": "Tokyo", "spans": [[3, 10]]})
    assert r.status_code == 422 and r.json()["field"] == "spans[0]"
    r = client.post("/probe", json={"template": "no slots here", "lang": "en"})
    assert r.status_code == 422 and "[X]" in r.json()["error"]
    r = client.post("/probe", json={"template": "[X] is in [Y].", "model": "/etc/passwd"})
    assert r.status_code == 422 and r.json()["field"] == "model"  # nothing in a request names a server file
    r = client.post("/nif", content=b"this is not turtle", headers={"content-type": "text/turtle"})
    assert r.status_code == 422 and r.json()["field"] == "body"


def test_the_stages_on_their_own(client):
    text = "Tokyo is the capital of Japan."
    found = client.post("/mentions", json={"text": text}).json()["results"][0]["mentions"]
    assert [m["surface"] for m in found] == ["Tokyo", "Japan"] and all(m["link_probability"] for m in found)
    [japan] = client.post("/candidates", json={"surfaces": ["Japan"], "k": 3}).json()["results"]
    assert japan["candidates"][0]["key"] == JAPAN and 0 < japan["candidates"][0]["prior"] <= 1
    rel = client.post("/disambiguate", json={"text": text, "spans": [[24, 5]], "format": "rel"}).json()
    assert len(rel) == 1 and rel[0][:4] == [24, 5, "Japan", "Japan"] and rel[0][6] == "country"
    ours = client.post("/disambiguate", json={"texts": [text], "spans": [[[0, 5]]]}).json()
    assert [m["surface"] for m in ours["results"][0]["mentions"]] == ["Tokyo"]
    entity = client.get(f"/entities/{JAPAN}").json()
    assert entity["names"]["ja"] == "日本" and entity["kind"] == "country" and entity["facts"]
    assert "served_by" in entity


def test_probe_answers_with_keys_labels_and_scores(client):
    r = client.post("/probe", json={"template": "[X] is the capital of [Y].", "subjects": ["Tokyo"], "top_k": 3})
    assert r.status_code == 200, r.text
    [row] = r.json()["rows"]
    assert len(row["answers"]) == 3 and all({"key", "label", "score"} <= set(a) for a in row["answers"])
    scores = [a["score"] for a in row["answers"]]
    assert scores == sorted(scores, reverse=True)


def test_info_health_and_the_schema(client):
    assert client.get("/health").json()["status"] == "ok"
    info = client.get("/info").json()
    assert "ja" in info["languages"] and info["limits"]["max_texts"] == 64
    schema = client.get("/openapi.json").json()
    assert {"/link", "/mentions", "/candidates", "/disambiguate", "/probe", "/entities/{key}", "/nif"} <= set(
        schema["paths"]
    )
    assert client.get("/docs").status_code == 200
    assert "access-control-allow-origin" not in client.get("/health", headers={"Origin": "http://evil"}).headers


def test_a_token_is_asked_and_compared(tiny_demo, embedded_db_path):
    from mluke.serve import Limits, ServeConfig, create_app
    from tests.mluke.serve_fixtures import shared_linker

    config = ServeConfig(model=str(tiny_demo), db=str(embedded_db_path), token="s3cret", limits=Limits())
    app = create_app(config, linker=shared_linker(tiny_demo, embedded_db_path))
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/").status_code == 200  # the page asks for the token itself
        r = c.post("/link", json={"text": "Tokyo"})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert c.post("/link", json={"text": "Tokyo"}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.post("/link", json={"text": "Tokyo"}, headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_binding_beyond_this_machine_is_said(monkeypatch):
    from mluke.serve.config import token_from_env
    from mluke.serve.running import exposure_note

    assert exposure_note("127.0.0.1") is None
    assert "reachable by other machines" in (exposure_note("0.0.0.0") or "")
    monkeypatch.setenv("MLUKE_SERVE_TOKEN", "from-env")
    assert token_from_env(None) == "from-env" and token_from_env("given") == "given"


GERBIL_REQUEST = """\
@prefix itsrdf: <http://www.w3.org/2005/11/its/rdf#> .
@prefix nif: <http://persistence.uni-leipzig.org/nlp2rdf/ontologies/nif-core#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

<http://www.aksw.org/gerbil/NifWebService/request_0#char=0,30> a nif:Context, nif:OffsetBasedString ;
    nif:beginIndex "0"^^xsd:nonNegativeInteger ;
    nif:endIndex "30"^^xsd:nonNegativeInteger ;
    nif:isString "Tokyo is the capital of Japan." .

<http://www.aksw.org/gerbil/NifWebService/request_0#offset_24_29> a nif:OffsetBasedString, nif:Phrase ;
    nif:anchorOf "Japan" ;
    nif:beginIndex "24"^^xsd:nonNegativeInteger ;
    nif:endIndex "29"^^xsd:nonNegativeInteger ;
    nif:referenceContext <http://www.aksw.org/gerbil/NifWebService/request_0#char=0,30> .
"""


def test_nif_reads_and_writes_gerbil_documents():
    from mluke.serve.nif import NifPhrase, read_nif, write_nif

    [doc] = read_nif(GERBIL_REQUEST)
    assert doc.text == "Tokyo is the capital of Japan."
    assert [(p.start, p.end, p.surface, p.entity) for p in doc.phrases] == [(24, 29, "Japan", None)]
    doc.phrases[0].entity = "http://www.wikidata.org/entity/Q17"
    doc.phrases.append(NifPhrase(0, 5, "Tokyo"))
    [again] = read_nif(write_nif([doc]))
    assert [(p.start, p.surface, p.entity) for p in again.phrases] == [
        (0, "Tokyo", None),
        (24, "Japan", "http://www.wikidata.org/entity/Q17"),
    ]
    assert again.phrases[1].uri == "http://www.aksw.org/gerbil/NifWebService/request_0#offset_24_29"


def test_nif_endpoint_links_given_phrases_and_finds_them_when_none(client):
    r = client.post("/nif", content=GERBIL_REQUEST.encode(), headers={"content-type": "text/turtle"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/turtle")
    from mluke.serve.nif import read_nif

    [doc] = read_nif(r.text)
    assert [(p.surface, p.entity) for p in doc.phrases] == [("Japan", "http://mluke.invalid/entity/geonames%3A1861060")]
    no_phrases = GERBIL_REQUEST.split("\n\n<http://www.aksw.org/gerbil/NifWebService/request_0#offset")[0]
    [found] = read_nif(client.post("/nif", content=no_phrases.encode()).text)
    assert [p.surface for p in found.phrases] == ["Tokyo", "Japan"]


def test_shutdown_lets_the_request_in_flight_finish(tiny_demo, embedded_db_path):
    """What uvicorn does on SIGTERM (``should_exit``): no new connections, the one in flight is answered."""
    app = make_app(tiny_demo, embedded_db_path)
    service = app.state.service
    with running_server(app) as (url, server):
        result = {}

        def slow_request():
            result["response"] = httpx.post(f"{url}/link", json={"text": "Tokyo is in Japan."}, timeout=30)

        busy = service.batcher.executor.submit(time.sleep, 3)  # the model's thread, busy for a while
        thread = threading.Thread(target=slow_request)
        thread.start()
        deadline = time.monotonic() + 3
        while service.batcher.batches == 0 and time.monotonic() < deadline:  # the request is in, waiting
            time.sleep(0.01)
        assert service.batcher.batches == 1 and not busy.done()
        server.should_exit = True  # as SIGTERM does
        thread.join(30)
        busy.result()
    assert result["response"].status_code == 200
    assert result["response"].json()["results"][0]["mentions"]


def test_linked_texts_export_to_displacy_manual_format():
    from mluke.results import LinkedMention, LinkedTexts

    linked = LinkedMention(0, 5, "Tokyo", "Q1490", "Tokyo", "Tokyo", 0.9, -0.1, 1.0, 0.9, False)
    nil = LinkedMention(9, 14, "Xyzzy", None, None, None, 0.1, -3.0, 0.5, 0.2, True, [{"key": "geonames:1"}])
    texts = LinkedTexts(["Tokyo is Xyzzy"], [[linked, nil]], "en", "combined")
    [doc] = texts.to_displacy()
    assert doc["text"] == "Tokyo is Xyzzy" and doc["title"] is None
    assert doc["ents"] == [
        {"start": 0, "end": 5, "label": "ENT", "kb_id": "Q1490", "kb_url": "https://www.wikidata.org/wiki/Q1490"},
        {"start": 9, "end": 14, "label": "NIL", "kb_id": "geonames:1", "kb_url": "#"},
    ]
    assert [e["label"] for e in texts.to_displacy(nil=False)[0]["ents"]] == ["ENT"]
