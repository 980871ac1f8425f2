"""The routes' FastAPI dependencies: what ``create_app`` put in ``app.state``, the bearer token and
the deadline.

Everything a route needs comes from ``request.app.state`` (``create_app`` fills it), so the
routers are plain modules with no closure over the app. The token is checked by one function,
``require_token``: the API routers and ``/metrics`` depend on it, and the MCP route, which is an
ASGI app and so takes no dependencies, calls it through ``TokenRequired``. The body checks are not
dependencies (``security`` says why).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, MutableMapping
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from efficientrag.data.schema import Chunk
from efficientrag.serve.answering import Answerer
from efficientrag.serve.config import ServeConfig
from efficientrag.serve.errors import UNAUTHORIZED, RequestError
from efficientrag.serve.metrics import Metrics
from efficientrag.serve.requests import DEADLINE_HEADER, request_deadline_s
from efficientrag.serve.service import Service

# ``Authorization: Bearer <token>``, parsed by FastAPI (and shown as the schema's security scheme,
# so /docs can send it). auto_error=False: the refusal is ours, in the API's error shape.
BEARER = HTTPBearer(auto_error=False, description="the server's EFFICIENTRAG_API_KEY, when it has one")


def app_config(request: Request) -> ServeConfig:
    return request.app.state.cfg


def app_service(request: Request) -> Service:
    return request.app.state.service


def app_answerer(request: Request) -> Answerer:
    return request.app.state.answerer


def app_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


def app_contents(request: Request) -> Callable[[Chunk], str]:
    return request.app.state.contents


ConfigDep = Annotated[ServeConfig, Depends(app_config)]
ServiceDep = Annotated[Service, Depends(app_service)]
AnswererDep = Annotated[Answerer, Depends(app_answerer)]
MetricsDep = Annotated[Metrics, Depends(app_metrics)]
ContentsDep = Annotated[Callable[[Chunk], str], Depends(app_contents)]


async def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
) -> None:
    """401 (``WWW-Authenticate: Bearer``, field ``authorization``) unless the request carries the
    server's token (``app.state.token``; None: no token, everything passes). Compared in constant
    time; the token is never logged or echoed."""
    expected: bytes | None = request.app.state.token
    if expected is None:
        return
    given = credentials.credentials.encode("utf-8") if credentials is not None else None
    if given is None or not hmac.compare_digest(given, expected):
        raise RequestError(
            401,
            "authorization",
            "missing or wrong bearer token (send 'Authorization: Bearer <EFFICIENTRAG_API_KEY>')",
            kind=UNAUTHORIZED,
            headers={"WWW-Authenticate": "Bearer"},
        )


class TokenRequired:
    """``require_token`` in front of an ASGI app that takes no dependencies (the MCP route). Its
    ``RequestError`` reaches the app's exception handler, as a dependency's does."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            await require_token(request, await BEARER(request))
        await self.app(scope, receive, send)


class Deadline:
    """The request's deadline in seconds, once its body is read: the least of ``serve.deadline_s``,
    the body's ``deadline_ms`` and the ``X-Envoy-Expected-Rq-Timeout-Ms`` header (``requests``).
    A bad header is refused (400, naming it) when ``seconds`` is asked, after the body's own
    checks, so every request refuses its first fault as before."""

    def __init__(self, cfg: ServeConfig, header: str | None) -> None:
        self.cfg = cfg
        self.header = header

    def seconds(self, deadline_ms: int | None, *, default_s: float | None = None) -> float:
        """The request's deadline; ``default_s`` where it names none (None: ``serve.deadline_s``)."""
        return request_deadline_s(self.cfg, deadline_ms, self.header, default_s=default_s)


def request_deadline(
    cfg: ConfigDep, header: Annotated[str | None, Header(alias=DEADLINE_HEADER)] = None
) -> Deadline:
    """The header's deadline (the caller's proxy sets it: Envoy, Istio), to combine with the body's."""
    return Deadline(cfg, header)


DeadlineDep = Annotated[Deadline, Depends(request_deadline)]
