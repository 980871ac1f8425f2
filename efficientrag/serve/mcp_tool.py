"""The loop as a Model Context Protocol tool, on the same app: ``POST /mcp``, tool ``retrieve``.

Agent frameworks and desktop assistants call tools over MCP (UltraRAG and Milvus's own MCP server
expose retrieval this way). The endpoint is the ``mcp`` SDK's streamable HTTP transport, mounted
as a route of the FastAPI app, so it sits behind the same checks as the API (the bearer token,
through ``dependencies.TokenRequired``, and ``security.BodyCheck``), and a call goes through the same ``Answerer`` as ``/v1/retrieve``: the same question checks,
admission by deadline (``serve.deadline_s``), queue and micro-batches. It runs stateless, with
JSON replies: any replica behind a load balancer can answer any call, with no session to stick to.

A refusal is the tool's error (``is_error``, with the API's ``field: message``), which the model
reads; the reply of a call is what ``/v1/retrieve`` gives for the question: the kept chunks with
id, title, text, score, hop and query.
"""

from __future__ import annotations

import logging
from typing import Any

from efficientrag.errors import MissingExtraError
from efficientrag.serve.answering import Answerer
from efficientrag.serve.config import ServeConfig
from efficientrag.serve.dependencies import TokenRequired
from efficientrag.serve.errors import RequestError
from efficientrag.serve.replies import KeptChunk, ToolResult
from efficientrag.serve.requests import check_request_questions
from efficientrag.serve.wire import result_to_json

MCP_PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")

TOOL_DESCRIPTION = (
    "Multi-hop retrieval: finds the passages that answer a question, following the question to the "
    "passages it needs next (no LLM call per hop). Returns the kept passages with their title, text, "
    "relevance score (0-1), the hop (0-based) and the query that found each."
)


def mcp_server(answer: Answerer, cfg: ServeConfig) -> Any:
    """An ``MCPServer`` with the ``retrieve`` tool over ``answer``."""
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        raise MissingExtraError(
            "serve.mcp needs the mcp package (pip install 'efficientrag[serve]'); or set serve.mcp=false"
        ) from exc

    server = _quietly(lambda: MCPServer("efficientrag", instructions=TOOL_DESCRIPTION))

    async def retrieve(question: str, ctx: Context) -> ToolResult:
        base = answer.service.base
        try:
            # The SDK drops arguments the tool does not declare; /v1/retrieve refuses unknown keys,
            # so the tool does too, rather than ignore a setting the caller thinks it changed.
            _refuse_unknown_arguments(ctx.request_context.params)
            check_request_questions(base, [question], ["question"], cfg, list_field="question")
            (result,) = await answer([question], {}, cfg.deadline_s, None, field="question")
        except RequestError as exc:
            raise ToolError(f"{exc.status}: {exc.field}: {exc.message}") from None
        row = result_to_json(result, trace=False)
        return ToolResult(question=row["question"], chunks=[KeptChunk(**c) for c in row["chunks"]])

    # The SDK reads the tool's signature from its annotations; with postponed annotations in this
    # module they are strings naming a class imported above only when serving, so they are given
    # as the classes themselves.
    retrieve.__annotations__ = {"question": str, "ctx": Context, "return": ToolResult}
    server.add_tool(retrieve, name="retrieve", description=TOOL_DESCRIPTION)
    return server


def _refuse_unknown_arguments(params: Any) -> None:
    """422 for a ``tools/call`` argument other than ``question``, naming it."""
    arguments = (params or {}).get("arguments") or {}
    unknown = sorted(set(arguments) - {"question"})
    if unknown:
        raise RequestError(422, unknown[0], "unknown argument: the retrieve tool takes only 'question'")


def mount_mcp(app: Any, server: Any, cfg: ServeConfig) -> None:
    """Add the SDK's streamable HTTP route to ``app`` (its session manager runs in the app's
    lifespan), behind the bearer token (``TokenRequired``: a route that is an ASGI app takes no
    dependencies). On loopback the SDK's DNS-rebinding protection stays on (a web page must not
    reach a local server through a name it controls); on other interfaces the Host header is the
    load balancer's to choose, and the bearer token guards the endpoint."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.routing import Route

    security = (
        None if cfg.host in LOOPBACK else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    sub = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=cfg.max_body_bytes,
        transport_security=security,
        host=cfg.host,
    )
    for route in sub.routes:
        if isinstance(route, Route) and route.path == MCP_PATH:
            app.router.routes.append(Route(MCP_PATH, endpoint=TokenRequired(route.app)))
        else:
            app.router.routes.append(route)


def _quietly(make: Any) -> Any:
    """``MCPServer()`` calls ``logging.basicConfig``, which, in a process whose root logger has no
    handler yet (an embedding program, a test), would install the SDK's handler and level for
    everyone. A handler present for the moment makes that call a no-op."""
    root = logging.getLogger()
    placeholder = logging.NullHandler() if not root.handlers else None
    if placeholder is not None:
        root.addHandler(placeholder)
    try:
        return make()
    finally:
        if placeholder is not None:
            root.removeHandler(placeholder)
