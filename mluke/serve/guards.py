"""What every request passes before a route sees it, as one plain ASGI middleware (:class:`Guard`): the bearer
token (compared in constant time), the size of the body (413 past the limit, whether it says its length or
streams), and the headers that tell which model and kb answered (on every response, errors included)."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Paths open without the token: the page (it asks for the token itself), its liveness probe and the schema.
OPEN_PATHS = frozenset({"/", "/health", "/openapi.json", "/docs", "/favicon.ico"})


class BodyTooLarge(HTTPException):
    """The body went past the limit while it was read (raised inside the app, which answers it with 413)."""

    def __init__(self, message: str) -> None:
        super().__init__(413, message)


async def send_error(
    send: Send, status: int, message: str, field: str | None, headers: list[tuple[bytes, bytes]]
) -> None:
    """A JSON error body (:class:`mluke.serve.schemas.ErrorBody`) with ``status``."""
    body = json.dumps({"error": message, "field": field}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The token, the body size and the identity headers, around ``app``.

    Args:
        app: the application.
        token: the bearer token requests must carry (``None``: none).
        max_body_bytes: the largest body.
        identity: the ``X-Mluke-*`` headers added to every response.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, identity: dict[str, str]) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.headers = [(f"x-mluke-{k}".encode(), v.encode("latin-1", "replace")) for k, v in identity.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_identity(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        if self.token is not None and scope["path"] not in OPEN_PATHS and not self._authorised(scope):
            await send_error(
                send_with_identity,
                401,
                "Authorization: expected the header 'Authorization: Bearer <token>' with this service's token",
                "Authorization",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        length = _content_length(scope)
        if length is not None and length > self.max_body_bytes:
            await send_error(send_with_identity, 413, self._too_large(length), "body", [])
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    raise BodyTooLarge(self._too_large(None))
            return message

        await self.app(scope, limited_receive, send_with_identity)

    def _authorised(self, scope: Scope) -> bool:
        assert self.token is not None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False

    def _too_large(self, length: int | None) -> str:
        size = f"{length:,} bytes" if length is not None else "more bytes"
        return f"body: {size}; this service takes at most {self.max_body_bytes:,} bytes per request"


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
