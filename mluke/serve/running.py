"""Running the service: :func:`serve`, uvicorn around :func:`mluke.serve.app.create_app` (what ``mluke serve``
calls). On SIGTERM or Ctrl-C uvicorn stops taking connections and lets the requests in flight finish (up to
``drain_s`` seconds); then the queue is drained and the model thread stops."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mluke.serve.config import ServeConfig

#: Addresses that only this machine reaches.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def exposure_note(host: str) -> str | None:
    """What to tell the user about binding ``host``: ``None`` for a loopback address."""
    if host in LOCAL_HOSTS:
        return None
    return (
        f"note: listening on {host}: the service is then reachable by other machines on the network; "
        "give it a token (--token or $MLUKE_SERVE_TOKEN) unless that is what you want"
    )


def serve(
    config: ServeConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    drain_s: int = 30,
    say: Callable[[str], object] = lambda line: print(line, file=sys.stderr),
) -> None:
    """Load the model and the kb, then answer requests on ``host:port`` until SIGTERM or Ctrl-C.

    Args:
        config: what to serve (:class:`mluke.serve.config.ServeConfig`).
        host: the address to bind (default: this machine only).
        port: the port.
        drain_s: how long requests in flight may take to finish after SIGTERM.
        say: where the notes go (standard error).
    """
    import uvicorn

    from mluke.serve.app import create_app

    note = exposure_note(host)
    if note:
        say(note)
    app = create_app(config)
    say(f"mluke serve: http://{host if ':' not in host else f'[{host}]'}:{port}/ (API docs at /docs)")
    uvicorn.run(app, host=host, port=port, timeout_graceful_shutdown=drain_s, log_level="warning", access_log=False)
