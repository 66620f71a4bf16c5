"""An HTTP service over linking and probing: ``mluke serve``, or :func:`create_app` to mount in another ASGI app.

- ``app``: :func:`create_app`, the routes and the error answers (FastAPI; ``/openapi.json``, ``/docs``);
- ``service``: :class:`Service`, the model and the kb loaded once, and what each endpoint computes;
- ``batching``: :class:`Batcher`, requests that arrive together linked in one model call, a bounded queue;
- ``config``: :class:`ServeConfig` and :class:`Limits`, what a service serves and how much it takes;
- ``guards``: the bearer token, the body size limit and the identity headers;
- ``schemas``: the JSON of each request and answer; ``offsets``: UTF-16 offsets for browsers;
- ``rel``: REL's request and answer shapes; ``nif``: NIF 2.0 reading and writing (:func:`read_nif`,
  :func:`write_nif`, usable without the service), ``nif_routes``: ``POST /nif``;
- ``page``: the page at ``/`` (``static/index.html``, no external assets);
- ``running``: running the app with uvicorn (what ``mluke serve`` calls).

Needs the ``serve`` extra (``pip install 'mluke[serve]'``): FastAPI, uvicorn and rdflib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.lazy import lazy_getattr

if TYPE_CHECKING:
    from mluke.serve.app import create_app as create_app
    from mluke.serve.batching import Batcher as Batcher
    from mluke.serve.config import Limits as Limits, ServeConfig as ServeConfig
    from mluke.serve.nif import read_nif as read_nif, write_nif as write_nif
    from mluke.serve.running import serve as serve
    from mluke.serve.service import Service as Service

_LAZY = {
    "create_app": "mluke.serve.app",
    "Batcher": "mluke.serve.batching",
    "Limits": "mluke.serve.config",
    "ServeConfig": "mluke.serve.config",
    "read_nif": "mluke.serve.nif",
    "write_nif": "mluke.serve.nif",
    "serve": "mluke.serve.running",
    "Service": "mluke.serve.service",
}

__all__ = list(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
