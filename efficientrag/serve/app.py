"""The routes: ``/v1/retrieve``, the Search-R1 ``/retrieve``, health, readiness, metrics and the page.

``create_app`` takes an already loaded ``EfficientRAG`` (``startup`` opens the index and the models
before the port opens); no request can name a file, a model folder or a backend. Every refusal is
a ``RequestError`` (``errors``) naming its field, and every request that reaches the loop goes
through the micro-batcher, so its reply equals a one-at-a-time ``retrieve_batch`` call (floats up
to float32 noise: see ``batcher``).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.serve import errors
from efficientrag.serve.backend import BackendFailure
from efficientrag.serve.batcher import DeadlineExceeded, MicroBatcher, QueueFull
from efficientrag.serve.config import ALLOWED_SETTINGS, ServeConfig
from efficientrag.serve.errors import RequestError
from efficientrag.serve.metrics import Metrics
from efficientrag.serve.requests import (
    RetrieveRequest,
    SearchR1Request,
    check_request_questions,
    request_questions,
    settings_config,
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


def create_app(rag: EfficientRAG, cfg: ServeConfig, *, backend: str, token: str | None = None) -> Any:
    """The ASGI app: FastAPI behind the token/body-size gate (and CORS when configured)."""
    service = Service(rag, backend, trim_memory=cfg.trim_memory)
    metrics = Metrics()
    batcher = MicroBatcher(service.run, cfg.max_batch, cfg.max_wait_ms / 1000, cfg.max_queue, metrics)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        await batcher.start()
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

    async def answer(questions: list[str], fields: list[str], settings: dict[str, Any], deadline_ms: int | None,
                     list_field: str) -> list[RetrievalResult]:  # fmt: skip
        check_request_questions(service.base, questions, fields, cfg, list_field=list_field)
        key, _ = settings_config(service.base.config, settings, cfg)
        deadline = cfg.deadline_s if deadline_ms is None else min(cfg.deadline_s, deadline_ms / 1000)
        try:
            return await batcher.submit(key, questions, deadline)
        except QueueFull as exc:
            raise RequestError(503, "queue", f"the server is busy: {exc}", kind=errors.QUEUE_FULL,
                               headers={"Retry-After": "1"}) from None  # fmt: skip
        except DeadlineExceeded as exc:
            raise RequestError(504, "deadline_ms", str(exc), kind=errors.DEADLINE) from None
        except BackendFailure as exc:
            log.warning("%s", exc)
            raise errors.from_backend(exc) from None
        except Exception:
            log.exception("retrieve_batch failed")
            raise RequestError(
                500, "server", "retrieval failed; see the server log", kind=errors.INTERNAL
            ) from None

    @app.post("/v1/retrieve", summary="EfficientRAG on one question or a list")
    async def retrieve_v1(body: RetrieveRequest) -> dict[str, Any]:
        """``{"question": "..."}`` or ``{"questions": [...]}``, optional ``settings`` (allow-listed loop
        settings), ``trace`` and ``deadline_ms``. Reply: ``{"results": [{"question", "chunks":
        [{"id", "title", "text", "score", "hop", "query"}], "counters", "trace"?}]}``."""
        questions, fields = request_questions(body)
        list_field = "question" if body.question is not None else "questions"
        results = await answer(questions, fields, body.settings.model_dump(), body.deadline_ms, list_field)
        out = []
        for result in results:
            row = result_to_json(result, trace=body.trace)
            if body.trace:
                row["documents"] = hit_documents(result, getattr(service.base.retriever, "corpus", None))
            out.append(row)
        return {"results": out}

    @app.post("/retrieve", summary="Search-R1 / FlashRAG retrieval-server shape")
    async def retrieve_search_r1(body: SearchR1Request) -> dict[str, Any]:
        """``{"queries": [...], "topk": k, "return_scores": bool}`` -> ``{"result": [[doc, ...], ...]}``,
        ``doc`` = ``{"id", "contents": "title\\ntext"}`` (``{"document": doc, "score": s}`` with
        scores). ``topk`` caps the chunks per query (the loop's ``chunk_budget``)."""
        fields = [f"queries[{i}]" for i in range(len(body.queries))]
        settings = {"chunk_budget": body.topk} if body.topk is not None else {}
        results = await answer(list(body.queries), fields, settings, None, "queries")
        return {"result": [search_r1_json(r, return_scores=body.return_scores) for r in results]}

    _add_operational_routes(app, service, metrics, cfg)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _refuse(metrics, errors.validation_error(list(exc.errors()), ALLOWED_SETTINGS))

    @app.exception_handler(RequestError)
    async def refused(_: Request, exc: RequestError) -> JSONResponse:
        return _refuse(metrics, exc)

    return _wrap(app, cfg, token, metrics)


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
