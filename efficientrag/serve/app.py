"""The routes: ``/v1/retrieve``, the Search-R1 ``/retrieve``, the MCP endpoint ``/mcp``, health,
readiness, metrics and the page.

``create_app`` takes an already loaded ``EfficientRAG`` (``startup`` opens the index and the models
before the port opens); no request can name a file, a model folder or a backend. Every refusal is
a ``RequestError`` (``errors``) naming its field, and every request that reaches the loop goes
through ``answering.Answerer``: admission by deadline, the micro-batcher, and the client's
disconnect. A reply equals a one-at-a-time ``retrieve_batch`` call (floats up to float32 noise:
see ``batcher``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from efficientrag.data.schema import Chunk
from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.serve import errors
from efficientrag.serve.answering import Answerer
from efficientrag.serve.batcher import MicroBatcher
from efficientrag.serve.config import ALLOWED_SETTINGS, ServeConfig
from efficientrag.serve.contents import SearchR1Contents
from efficientrag.serve.errors import RequestError
from efficientrag.serve.mcp_tool import mcp_server, mount_mcp
from efficientrag.serve.metrics import Metrics
from efficientrag.serve.requests import (
    DEADLINE_HEADER,
    RetrieveRequest,
    SearchR1Request,
    check_request_questions,
    request_deadline_s,
    request_questions,
    search_r1_queries,
)
from efficientrag.serve.security import Gate
from efficientrag.serve.service import Service
from efficientrag.serve.wire import hit_documents, result_to_json, search_r1_json

log = logging.getLogger(__name__)

# The page's files (efficientrag/serve/static), by the name they are served under.
STATIC_FILES = {"page.js": "text/javascript", "page.css": "text/css"}
# The page loads nothing from elsewhere, and the browser enforces it.
# (blob: is the JSON link the page makes of the reply it holds.)
PAGE_CSP = (
    "default-src 'self'; connect-src 'self' blob:; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)


def create_app(
    rag: EfficientRAG,
    cfg: ServeConfig,
    *,
    backend: str,
    token: str | None = None,
    contents: SearchR1Contents | None = None,
) -> Any:
    """The ASGI app: FastAPI behind the token/body-size gate (and CORS when configured).

    Args:
        rag: The loaded loop.
        cfg: The service settings.
        backend: How replies and logs name the search backend.
        token: The bearer token (None: no token).
        contents: The corpus rows' own Search-R1 ``contents`` (``serve.contents.read_contents``);
            None: ``"title\\ntext"`` of each chunk.
    """
    service = Service(rag, backend, trim_memory=cfg.trim_memory)
    metrics = Metrics()
    batcher = MicroBatcher(service.run, cfg.max_batch, cfg.max_wait_ms / 1000, cfg.max_queue, metrics)
    answer = Answerer(service, batcher, cfg)
    mcp = mcp_server(answer, cfg) if cfg.mcp else None

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        await batcher.start()
        async with contextlib.AsyncExitStack() as stack:
            if mcp is not None:
                await stack.enter_async_context(mcp.session_manager.run())
            log.info("serving EfficientRAG over %s; the page is at /, the API schema at /docs", backend)
            yield
        await batcher.stop()

    app = FastAPI(
        title="EfficientRAG",
        summary="Multi-hop retrieval with no LLM call per hop",
        version="1",
        lifespan=lifespan,
    )
    app.state.service, app.state.metrics, app.state.batcher = service, metrics, batcher
    _add_retrieval_routes(app, answer, cfg, (contents or SearchR1Contents()).contents)
    _add_operational_routes(app, service, metrics, cfg)
    if mcp is not None:
        mount_mcp(app, mcp, cfg)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _refuse(metrics, errors.validation_error(list(exc.errors()), ALLOWED_SETTINGS))

    @app.exception_handler(RequestError)
    async def refused(_: Request, exc: RequestError) -> JSONResponse:
        return _refuse(metrics, exc)

    return _wrap(app, cfg, token, metrics)


def _add_retrieval_routes(
    app: FastAPI, answer: Answerer, cfg: ServeConfig, contents: Callable[[Chunk], str]
) -> None:
    """``/v1/retrieve`` and the Search-R1 ``/retrieve``."""
    service = answer.service

    @app.post("/v1/retrieve", summary="EfficientRAG on one question or a list")
    async def retrieve_v1(body: RetrieveRequest, request: Request) -> dict[str, Any]:
        """``{"question": "..."}`` or ``{"questions": [...]}``, optional ``settings`` (allow-listed loop
        settings), ``trace`` and ``deadline_ms``. Reply: ``{"results": [{"question", "chunks":
        [{"id", "title", "text", "score", "hop", "query"}], "counters", "trace"?}]}``."""
        questions, fields = request_questions(body)
        list_field = "question" if body.question is not None else "questions"
        deadline = request_deadline_s(cfg, body.deadline_ms, request.headers.get(DEADLINE_HEADER))
        answer.admit(len(questions), deadline, field=list_field)
        check_request_questions(service.base, questions, fields, cfg, list_field=list_field)
        results = await answer(questions, body.settings.model_dump(), deadline, request.receive)
        out = []
        for result in results:
            row = result_to_json(result, trace=body.trace)
            if body.trace:
                row["documents"] = hit_documents(result, getattr(service.base.retriever, "corpus", None))
            out.append(row)
        return {"results": out}

    @app.post("/retrieve", summary="Search-R1 / FlashRAG retrieval-server shape")
    async def retrieve_search_r1(body: SearchR1Request, request: Request) -> dict[str, Any]:
        """``{"queries": [...], "topk": k, "return_scores": bool}`` -> ``{"result": [[doc, ...], ...]}``,
        ``doc`` = ``{"id", "contents"}`` (``{"document": doc, "score": s}`` with scores), ``contents``
        the corpus row's own. A rollout's whole batch at once (``serve.max_queries``); an empty query
        gets an empty list. ``topk`` caps the chunks per query (the loop's ``chunk_budget``)."""
        asked = search_r1_queries(body, cfg)
        deadline = request_deadline_s(cfg, body.deadline_ms, request.headers.get(DEADLINE_HEADER))
        settings = {"chunk_budget": body.topk} if body.topk is not None else {}
        found: dict[int, RetrievalResult] = {}
        if asked:
            answer.admit(len(asked), deadline, field="queries")
            results = await answer([body.queries[i] for i in asked], settings, deadline, request.receive)
            found = dict(zip(asked, results, strict=True))
        return {
            "result": [
                search_r1_json(found.get(i), return_scores=body.return_scores, contents=contents)
                for i in range(len(body.queries))
            ]
        }


def _add_operational_routes(app: FastAPI, service: Service, metrics: Metrics, cfg: ServeConfig) -> None:
    """Health, readiness, metrics and the page: everything but the retrieval endpoints."""

    @app.get("/healthz", summary="the process is alive")
    async def healthz() -> dict[str, str]:
        return {"status": "alive"}

    @app.get("/readyz", summary="models loaded and the search backend answers")
    async def readyz() -> JSONResponse:
        state = await service.ready(cfg.probe_timeout_s)
        return JSONResponse(state, status_code=200 if state["ready"] else 503)

    @app.get("/metrics", summary="Prometheus metrics")
    async def prometheus() -> Response:
        payload, content_type = metrics.render()
        return Response(payload, media_type=content_type)

    @app.get("/", include_in_schema=False)
    async def page() -> Response:
        return _static("index.html", "text/html")

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise RequestError(404, "path", f"no such file: {name}")
        return _static(name, STATIC_FILES[name])


def _wrap(app: FastAPI, cfg: ServeConfig, token: str | None, metrics: Metrics) -> Any:
    """The gate outside the app; CORS outside the gate (its preflight carries no token)."""
    gated: Any = Gate(app, token=token, max_body_bytes=cfg.max_body_bytes, metrics=metrics)
    if cfg.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        gated = CORSMiddleware(
            gated,
            allow_origins=list(cfg.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    gated.state = app.state  # tests and embedders reach the service through the outermost app
    return gated


def _refuse(metrics: Metrics, exc: RequestError) -> JSONResponse:
    metrics.errors.labels(exc.kind).inc()
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


def _static(name: str, media_type: str) -> Response:
    content = resources.files("efficientrag.serve").joinpath("static", name).read_bytes()
    headers = {"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff"}
    return Response(content, media_type=media_type, headers=headers)
