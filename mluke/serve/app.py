"""The HTTP application: :func:`create_app` puts the routes, the error answers and the guards around a
:class:`mluke.serve.service.Service` (FastAPI; the schema at ``/openapi.json``, its page at ``/docs``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from kb.errors import MlukeError
from mluke.linking.linker import Linker
from mluke.serve import schemas as s
from mluke.serve.batching import Busy
from mluke.serve.config import ServeConfig
from mluke.serve.guards import Guard
from mluke.serve.service import RequestError, Service

T = TypeVar("T")

#: The error answers every route documents (one body: :class:`mluke.serve.schemas.ErrorBody`).
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorBody, "description": what}
    for code, what in [
        (401, "No or a wrong bearer token."),
        (404, "No such entity."),
        (413, "A body, text or list past the service's limits."),
        (422, "A field of the wrong type or value; the message names it."),
        (503, "The queue is full; retry after the Retry-After header's seconds."),
        (504, "The request ran past the service's time limit and was cancelled."),
    ]
}


def create_app(config: ServeConfig | None = None, *, linker: Linker | None = None) -> FastAPI:
    """The ASGI application of ``mluke serve``, to run with any ASGI server or mount in another app.

    The model and the kb are loaded here, once.

    Args:
        config: what to serve and the limits (default: the demo model, the embedded kb, default limits).
        linker: an already built :class:`mluke.Linker` to serve (its model and kb) instead of loading one.

    Returns:
        The FastAPI application; ``app.state.service`` is its :class:`mluke.serve.service.Service`.
    """
    config = config or ServeConfig()
    service = Service(config, linker)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.batcher.start()
        yield
        await service.batcher.stop()  # after the server stopped taking requests: what is queued is answered

    app = FastAPI(
        title="mluke",
        summary="Entity linking and cloze probing with mLUKE.",
        version=service.served_by["version"],
        lifespan=lifespan,
    )
    app.state.service = service
    _errors(app, service)
    _routes(app, service)
    from mluke.serve.nif_routes import add_nif_route
    from mluke.serve.page import add_page

    add_nif_route(app, service, timed=lambda a: _timed(service, a))
    add_page(app)
    if config.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    identity = {
        "model": service.served_by["model_fingerprint"] or service.served_by["model"],
        "kb": service.served_by["kb"],
    }
    app.add_middleware(Guard, token=config.token, max_body_bytes=config.limits.max_body_bytes, identity=identity)
    return app


async def _timed(service: Service, awaitable: Awaitable[T]) -> T:
    """``awaitable``, cancelled with a 504 past the time limit."""
    try:
        return await asyncio.wait_for(awaitable, service.limits.timeout_s)
    except asyncio.TimeoutError:
        raise RequestError(
            None,
            f"the request took longer than {service.limits.timeout_s:g} s (the service's timeout_s) and was cancelled",
            504,
        ) from None


def _error(status: int, message: str, field: str | None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split()), "field": field}, status_code=status, headers=headers)


def _field(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a field path: ``texts[2]``, ``spans[0][1]``."""
    out = ""
    for part in loc[1:] if loc and loc[0] == "body" else loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after[one_of()]",) or "[" in str(part):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def _errors(app: FastAPI, service: Service) -> None:
    retry = {"Retry-After": str(service.limits.retry_after_s)}

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        field = _field(tuple(first.get("loc", ())))
        if first.get("type") == "json_invalid":
            return _error(422, f"body: not valid JSON ({first.get('ctx', {}).get('error', 'parse error')})", "body")
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        return _error(422, f"{field}: {message}", field)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400:  # the body parser: bytes that are not UTF-8 JSON
            return _error(400, "body: not valid JSON in UTF-8", "body")
        field = "body" if exc.status_code == 413 else None
        return _error(exc.status_code, str(exc.detail), field, getattr(exc, "headers", None))

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return _error(exc.status, str(exc), exc.field)

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy) -> JSONResponse:
        return _error(503, f"{exc}; retry in {service.limits.retry_after_s} s", None, retry)

    @app.exception_handler(MlukeError)
    async def library_error(request: Request, exc: MlukeError) -> JSONResponse:
        return _error(422, str(exc), None)


def _routes(app: FastAPI, service: Service) -> None:
    served = service.served_by

    def answer(body: dict[str, Any]) -> JSONResponse:
        return JSONResponse({**body, "served_by": served})

    @app.get("/health", tags=["service"])
    async def health() -> dict[str, Any]:
        """Whether the service is up (no token needed)."""
        return {"status": "ok", "served_by": served}

    @app.get("/info", response_model=s.InfoResponse, responses=ERRORS, tags=["service"])
    async def info() -> JSONResponse:
        """The model, the kb, the languages, the limits and the batching counters."""
        batcher = service.batcher
        return answer(
            {
                "languages": list(service.languages),
                "limits": {k: getattr(service.limits, k) for k in service.limits.__dataclass_fields__},
                "batching": {
                    "model_calls": batcher.batches,
                    "batched_requests": batcher.batched_requests,
                    "queued": batcher.queued,
                },
            }
        )

    @app.post("/link", response_model=s.LinkResponse, responses=ERRORS, tags=["linking"])
    async def link(body: s.LinkRequest) -> JSONResponse:
        """Find the mentions of the texts and link each to a kb entity (requests that arrive together share one
        model call)."""
        lang = service.check_lang(body.lang)
        texts = service.check_texts(body.all_texts(), "texts" if body.texts is not None else "text")
        options = service.link_options(body.model_dump())
        found = await _timed(service, service.link(texts, lang, options))
        results = [{"mentions": service.linked_json(t, f, lang, body.candidates)} for t, f in zip(texts, found)]
        return answer({"results": results, "lang": lang})

    @app.post("/mentions", response_model=s.MentionsResponse, responses=ERRORS, tags=["stages"])
    async def mentions(body: s.MentionsRequest) -> JSONResponse:
        """Mention detection alone: the spans of kb names with their link probability."""
        lang = service.check_lang(body.lang)
        texts = service.check_texts(body.all_texts(), "texts" if body.texts is not None else "text")
        found = await _timed(service, service.batcher.call(lambda: service.mentions(texts, lang)))
        return answer({"results": [{"mentions": m} for m in found], "lang": lang})

    @app.post("/candidates", response_model=s.CandidatesResponse, responses=ERRORS, tags=["stages"])
    async def candidates(body: s.CandidatesRequest) -> JSONResponse:
        """A surface's candidate entities with their priors p(entity | surface), best first."""
        lang = service.check_lang(body.lang)
        field = "surfaces" if body.surfaces is not None else "surface"
        surfaces = service.check_texts([body.surface] if body.surface is not None else list(body.surfaces or []), field)
        k = service.check_count("k", body.k, service.limits.max_candidates)
        found = await _timed(service, service.batcher.call(lambda: service.candidates(surfaces, lang, k)))
        return answer({"results": found, "lang": lang})

    @app.post("/disambiguate", responses={**ERRORS, 200: {"model": s.LinkResponse}}, tags=["stages"])
    async def disambiguate(body: s.DisambiguateRequest) -> JSONResponse:
        """Link given spans ([start, length] in characters); REL's request shape and, with ``format="rel"``, its
        answer: ``[start, length, mention, title, md_score, ed_score, tag]`` per mention."""
        from mluke.serve.rel import check_spans, rel_rows

        lang = service.check_lang(body.lang)
        single = body.text is not None
        texts = service.check_texts(body.all_texts(), "text" if single else "texts")
        spans = check_spans(service, texts, body.spans, single)
        options = service.link_options(body.model_dump())
        found = await _timed(service, service.link(texts, lang, options, spans))
        if body.format == "rel":
            rows = [rel_rows(service, f) for f in found]
            return JSONResponse(rows[0] if single else rows)
        results = [{"mentions": service.linked_json(t, f, lang, body.candidates)} for t, f in zip(texts, found)]
        return answer({"results": results, "lang": lang})

    @app.post("/probe", response_model=s.ProbeResponse, responses=ERRORS, tags=["probing"])
    async def probe(body: s.ProbeRequest) -> JSONResponse:
        """Ask the model a cloze question: ranked answers per subject, with keys, labels and scores."""
        service.check_lang(body.lang)
        service.check_count("top_k", body.top_k, service.limits.max_candidates)
        for name in ("subjects", "candidates"):
            given = getattr(body, name)
            if given is not None:
                service.check_count(name, len(given), service.limits.max_subjects)
                service.check_texts(given, name)
        service.check_texts([body.template], "template")
        request = body.model_dump()
        return answer(await _timed(service, service.batcher.call(lambda: service.probe(request))))

    @app.get("/entities/{key}", response_model=s.EntityResponse, responses=ERRORS, tags=["kb"])
    async def entity(key: str) -> JSONResponse:
        """An entity's names in every language, its qualified names, kind and facts."""
        if len(key) > 200:
            raise RequestError("key", f"{len(key)} characters; an entity key is at most 200", 413)
        return answer(await _timed(service, service.batcher.call(lambda: service.entity(key))))

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(status_code=204)
