"""The app: ``create_app`` builds the service's state, includes the routers (``routers``), mounts
the MCP endpoint at ``/mcp`` and installs the exception handlers and middleware.

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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.middleware.cors import CORSMiddleware

from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.serve.answering import Answerer
from efficientrag.serve.batcher import MicroBatcher
from efficientrag.serve.config import ALLOWED_SETTINGS, ServeConfig
from efficientrag.serve.contents import SearchR1Contents
from efficientrag.serve.controlled_delay import ControlledDelay
from efficientrag.serve.errors import RequestError, validation_error
from efficientrag.serve.mcp_tool import mcp_server, mount_mcp
from efficientrag.serve.metrics import Metrics, RequestMetrics
from efficientrag.serve.requests import settings_config
from efficientrag.serve.routers import operations, page, retrieval, search_r1
from efficientrag.serve.schema import with_server_caps
from efficientrag.serve.security import BodyCheck
from efficientrag.serve.service import Service

log = logging.getLogger(__name__)


# What the warm-up runs, alone and then together, to measure a batch's cost before the first request:
# questions of the multi-hop kind the loop is built for, over whatever the corpus holds.
WARMUP_QUESTIONS = (
    "Where was the director of the film born?",
    "Who founded the company that made the product?",
    "In which country is the city where the author died?",
    "When was the university the scientist attended founded?",
)


def create_app(
    rag: EfficientRAG,
    cfg: ServeConfig,
    *,
    backend: str,
    token: str | None = None,
    contents: SearchR1Contents | None = None,
) -> FastAPI:
    """The ASGI app.

    Args:
        rag: The loaded loop.
        cfg: The service settings.
        backend: How replies and logs name the search backend.
        token: The bearer token (None: no token).
        contents: The corpus rows' own Search-R1 ``contents`` (``serve.contents.read_contents``);
            None: ``"title\\ntext"`` of each chunk.
    """
    app = FastAPI(
        title="EfficientRAG",
        summary="Multi-hop retrieval with no LLM call per hop",
        version="1",
        lifespan=lifespan,
        exception_handlers={RequestValidationError: invalid, RequestError: refused},
    )
    state = app.state
    state.cfg, state.metrics = cfg, Metrics()
    state.token = token.encode("utf-8") if token else None
    state.service = Service(rag, backend, trim_memory=cfg.trim_memory)
    state.batcher = MicroBatcher(
        state.service.run,
        cfg.max_batch,
        cfg.max_wait_ms / 1000,
        cfg.max_queue,
        state.metrics,
        ControlledDelay(cfg.queue_target_s, cfg.queue_interval_s),
    )
    state.answerer = Answerer(state.service, state.batcher, cfg)
    app.openapi = with_server_caps(app, cfg)  # type: ignore[method-assign]
    state.contents = (contents or SearchR1Contents()).contents

    app.include_router(retrieval.router)
    app.include_router(search_r1.router)
    app.include_router(operations.router)
    app.include_router(page.router)
    state.mcp = mcp_server(state.answerer, cfg) if cfg.mcp else None
    if state.mcp is not None:
        mount_mcp(app, state.mcp, cfg)

    # Added innermost first: CORS (its preflight carries no token) outside the metrics, the
    # metrics outside the body check, so that its refusals are counted.
    app.add_middleware(BodyCheck, max_body_bytes=cfg.max_body_bytes, metrics=state.metrics)
    app.add_middleware(RequestMetrics, metrics=state.metrics)
    if cfg.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cfg.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    return app


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The batcher's worker (after a warm-up that measures what a batch costs), and the MCP session
    manager, for as long as the app serves."""
    state = app.state
    await state.batcher.start()
    if state.cfg.warmup:
        key, _ = settings_config(state.service.base.config, {}, state.cfg)
        await state.batcher.warm_up(key, list(WARMUP_QUESTIONS))
    async with contextlib.AsyncExitStack() as stack:
        if state.mcp is not None:
            await stack.enter_async_context(state.mcp.session_manager.run())
        log.info(
            "serving EfficientRAG over %s; the page is at /, the API schema at /docs", state.service.backend
        )
        yield
    await state.batcher.stop()


async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's validation errors, as the first one's ``RequestError``."""
    return await refused(request, validation_error(list(exc.errors()), ALLOWED_SETTINGS))


async def refused(request: Request, exc: RequestError) -> JSONResponse:
    """Every refusal raised while serving: counted by kind, sent with its status and headers."""
    request.app.state.metrics.errors.labels(exc.kind).inc()
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)
