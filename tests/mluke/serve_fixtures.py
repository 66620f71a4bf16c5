"""Shared pieces of the service's tests: an app over the tiny demo model and the embedded kb, and a real server on
127.0.0.1 in a thread (for the browser and the drain on shutdown)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: A text with an astral character (two UTF-16 code units) before the mentions, in three scripts.
EMOJI_TEXTS = {
    "en": "🙂 Tokyo is the capital of Japan.",
    "ja": "🙂 東京は日本の首都です。",
    "ar": "🙂 طوكيو هي عاصمة اليابان.",
}


def make_app(model: Path, db: Path, **limits: Any) -> Any:
    """The app over ``model`` and ``db`` with these :class:`mluke.serve.config.Limits` (the others default)."""
    from mluke.serve import Limits, ServeConfig, create_app

    config = ServeConfig(model=str(model), db=str(db), limits=Limits(**limits))
    return create_app(config, linker=shared_linker(model, db))


_LINKERS: dict[tuple[Path, Path], Any] = {}


def shared_linker(model: Path, db: Path) -> Any:
    """One :class:`mluke.Linker` per model and kb for the whole session (loading is the slow part)."""
    from mluke import Linker

    if (model, db) not in _LINKERS:
        _LINKERS[(model, db)] = Linker(str(model), db)
    return _LINKERS[(model, db)]


@contextmanager
def running_server(app: Any) -> Iterator[tuple[str, Any]]:
    """``app`` served by uvicorn on 127.0.0.1 (a free port) in a thread: its base URL and the server."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def gather(*coroutines: Any) -> list[Any]:
    """Run coroutines together in a fresh event loop."""

    async def run() -> list[Any]:
        return list(await asyncio.gather(*coroutines))

    return asyncio.run(run())
