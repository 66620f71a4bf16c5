"""``POST /nif``: GERBIL's way in. A document with phrases gets them linked (D2KB); a document without any gets its
mentions found and linked (A2KB). The answer is the same NIF with ``itsrdf:taIdentRef`` on each phrase."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response

from kb.errors import InputFormatError
from mluke.options import LinkOptions
from mluke.serve.nif import NifDocument, NifPhrase, entity_iri, read_nif, write_nif
from mluke.serve.service import RequestError, Service

TURTLE = "text/turtle"


def add_nif_route(app: FastAPI, service: Service, *, timed: Callable[[Awaitable[Any]], Awaitable[Any]]) -> None:
    """Adds ``POST /nif`` to ``app``; ``timed`` applies the service's time limit."""

    @app.post(
        "/nif",
        tags=["linking"],
        response_class=Response,
        openapi_extra={"requestBody": {"content": {TURTLE: {"schema": {"type": "string"}}}, "required": True}},
        responses={200: {"content": {TURTLE: {"schema": {"type": "string"}}}, "description": "The linked NIF."}},
    )
    async def nif(request: Request, lang: str = Query("en", description="The documents' language.")) -> Response:
        """NIF 2.0 in Turtle (what GERBIL sends) in, the linked phrases back in NIF."""
        service.check_lang(lang)
        raw = await request.body()
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestError("body", "not UTF-8 text (expected NIF 2.0 in Turtle)", 400) from None
        try:
            docs = read_nif(data)
        except InputFormatError as exc:
            raise RequestError("body", str(exc)) from None
        if not docs:
            raise RequestError("body", "no nif:Context in the document (expected NIF 2.0 in Turtle)")
        service.check_texts([d.text for d in docs], "body")
        given = [[(p.start, p.end - p.start) for p in d.phrases] for d in docs]
        for spans in given:
            service.check_count("body", len(spans), service.limits.max_spans)
        options = LinkOptions()
        out: list[NifDocument] = []
        for doc, spans in zip(docs, given):  # documents with and without phrases are linked apart
            found = await timed(service.link([doc.text], lang, options, [spans] if spans else None))
            phrases = [NifPhrase(m.start, m.end, m.surface, entity_iri(m.key, m.surface)) for m in found[0]]
            uris = {(p.start, p.end): p.uri for p in doc.phrases}
            for p in phrases:  # the file's own phrase IRIs
                p.uri = uris.get((p.start, p.end))
            out.append(NifDocument(doc.uri, doc.text, phrases))
        return Response(write_nif(out), media_type=TURTLE)
