"""What a service is allowed to do: :class:`Limits` (sizes, queue, time) and :class:`ServeConfig` (what it serves,
who may call it). Plain data, checked when made, importable without FastAPI."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from kb.errors import OptionError, option

#: The environment variable that holds the bearer token when ``--token`` is not given.
TOKEN_ENV = "MLUKE_SERVE_TOKEN"


@dataclass(frozen=True)
class Limits:
    """How much one request may ask and how long it may wait; a service answers 413 above the sizes, 503 with
    ``Retry-After`` when its queue is full and 504 when a request runs past ``timeout_s``.

    Args:
        max_body_bytes: the largest request body (bytes).
        max_text_chars: the longest text of a request (characters).
        max_texts: the most texts in one request.
        max_spans: the most spans given for one text (``/disambiguate``, ``/nif``).
        max_candidates: the largest ``candidates=k`` and ``top_k``.
        max_subjects: the most subjects of one ``/probe`` request.
        queue_texts: texts waiting for the model at once; beyond it a request is refused with 503.
        batch_texts: the most texts the model links in one call (requests that arrive together are batched).
        gather_ms: how long the first request of an idle service waits for others to join its batch (when the
            last batch held several requests: a lone client is not held back).
        batching: ``False`` links each request on its own (for comparison; the queue still applies).
        timeout_s: a request still waiting or running after this many seconds is answered 504.
        retry_after_s: the ``Retry-After`` header of a 503.
    """

    max_body_bytes: int = 1 << 20
    max_text_chars: int = 100_000
    max_texts: int = 64
    max_spans: int = 1_000
    max_candidates: int = 30
    max_subjects: int = 100
    queue_texts: int = 1_024
    batch_texts: int = 64
    gather_ms: float = 5.0
    batching: bool = True
    timeout_s: float = 60.0
    retry_after_s: int = 1

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_text_chars", "max_texts", "max_spans", "max_candidates", "max_subjects"):
            _at_least_one(name, getattr(self, name))
        for name in ("queue_texts", "batch_texts", "retry_after_s"):
            _at_least_one(name, getattr(self, name))
        for name in ("gather_ms", "timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                cli = "--timeout" if name == "timeout_s" else None
                raise OptionError(
                    f"{{{name}}}: expected a number of at least 0", options={name: option(name, value, cli)}
                )


def _at_least_one(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise OptionError(f"{{{name}}}: expected a whole number of at least 1", options={name: option(name, value)})


@dataclass(frozen=True)
class ServeConfig:
    """What a service serves and to whom.

    Args:
        model: the checkpoint folder or hub name (``None``: the embedded demo model).
        db: the kb's path (``None``: the embedded kb).
        device: where the model runs (``"auto"``, ``"cpu"``, ``"cuda"``; ``None``: as loaded).
        token: a bearer token every request but ``/health`` and the page must carry (``None``: none asked;
            :func:`token_from_env` reads ``MLUKE_SERVE_TOKEN``).
        cors_origins: origins a browser may call the API from (none: no CORS headers at all).
        limits: sizes, queue and time (:class:`Limits`).
    """

    model: str | None = None
    db: str | None = None
    device: str | None = None
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise OptionError("{token}: expected a non-empty token", options={"token": option("token", "''")})


def token_from_env(given: str | None) -> str | None:
    """``given``, else the ``MLUKE_SERVE_TOKEN`` environment variable, else ``None`` (no token asked)."""
    return given if given else (os.environ.get(TOKEN_ENV) or None)
