"""The token's source, and the one check that stays ASGI middleware: the request body before
FastAPI reads it.

The bearer token is a FastAPI dependency (``dependencies.require_token``). The body checks cannot
be: FastAPI reads and parses a JSON body *before* a route's dependencies run, so a dependency
could refuse an oversized body only after holding all of it in memory, and a body that is not
UTF-8 would already have failed FastAPI's own parse with a bare 400 that names no field. So
``BodyCheck`` refuses, before any route sees the request: a JSON endpoint's body sent as something
else (415, from ``Content-Type``, without reading it), a body over ``serve.max_body_bytes`` (413,
from its ``Content-Length`` or while it streams, never held whole), and a JSON endpoint's body
that is not UTF-8 (400, naming the byte). These run before the token check: a request without the
token costs at most one bounded body read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.serve.errors import BODY_TOO_LARGE, RequestError
from efficientrag.serve.metrics import API_PATHS, Metrics

API_KEY_ENV = "EFFICIENTRAG_API_KEY"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def api_key_from_env() -> str | None:
    """The token, or None when the variable is unset. Set but blank is a mistake, not "off"."""
    value = os.environ.get(API_KEY_ENV)
    if value is None:
        return None
    if not value.strip():
        raise InvalidArgumentError(f"{API_KEY_ENV} is set but empty; unset it to serve without a token")
    return value.strip()


class BodyCheck:
    """ASGI middleware: see the module docstring. Its refusals are counted in ``metrics.errors``
    (the app's exception handlers never see them)."""

    def __init__(self, app: Any, *, max_body_bytes: int, metrics: Metrics) -> None:
        self.app = app
        self.max_body = max_body_bytes
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        refusal = _not_json(scope, path)
        if refusal is None and scope.get("method") in ("POST", "PUT", "PATCH"):
            body, refusal = await self._read_body(scope, receive)
            refusal = refusal or _not_utf8(path, body)
            if refusal is None:
                receive = _replay(body, receive)
        if refusal is not None:
            self.metrics.errors.labels(refusal.kind).inc()
            await _send_error(send, refusal)
            return
        await self.app(scope, receive, send)

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[bytes, RequestError | None]:
        too_large = RequestError(
            413, "body", f"larger than this server's limit of {self.max_body} bytes", kind=BODY_TOO_LARGE
        )
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            return b"", too_large
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"", None
            part = message.get("body", b"")
            size += len(part)
            if size > self.max_body:
                return b"", too_large
            chunks.append(part)
            if not message.get("more_body", False):
                return b"".join(chunks), None


def _not_json(scope: Scope, path: str) -> RequestError | None:
    """A body sent as a form (curl -d without a header) would reach the routes unparsed."""
    if scope.get("method") != "POST" or path not in API_PATHS:
        return None
    kind = (_header(scope, b"content-type") or "application/json").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return None
    return RequestError(
        415, "content-type", f"send the body as JSON (Content-Type: application/json), not {kind}"
    )


def _not_utf8(path: str, body: bytes) -> RequestError | None:
    """A JSON body is UTF-8 (RFC 8259). FastAPI answers other bytes with a bare 400, "There was an
    error parsing the body", without the ``field`` every other refusal names; this one says which
    byte, as the readers of files do."""
    if path not in API_PATHS:
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = body[exc.start : exc.start + 1].hex()
        return RequestError(
            400,
            "body",
            f"not UTF-8: byte 0x{bad} at byte offset {exc.start} ({exc.reason}); send the JSON body encoded as UTF-8",
        )
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return None


def _replay(body: bytes, original: Receive) -> Receive:
    """The body read once, then the connection's own messages (a disconnect, when it comes)."""
    sent = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent
        if sent:
            return await original()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _send_error(send: Send, error: RequestError) -> None:
    payload = json.dumps(error.body()).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in error.headers.items()]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
