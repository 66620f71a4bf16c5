"""The page at ``/``: one HTML file with its script and style inline (no external assets, works offline), read
from the package."""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

#: Nothing but the page itself and the service: no external script, style, font or image.
POLICY = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


@functools.cache
def page_html() -> str:
    """The page's HTML (``mluke/serve/static/index.html``)."""
    return (files("mluke.serve") / "static" / "index.html").read_text(encoding="utf-8")


def add_page(app: FastAPI) -> None:
    """Serves the page at ``/``."""

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(page_html(), headers={"Content-Security-Policy": POLICY})
