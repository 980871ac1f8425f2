"""Prometheus metrics of one server (``GET /metrics``).

A registry of its own per app, not prometheus_client's global one, so two apps in one process (the
tests, an embedding program) count separately. The endpoint label only takes the API's own paths,
so random paths cannot grow the series without bound. ``RequestMetrics`` is the ASGI middleware
that counts every API request by its status, refusals of the middleware inside it included.
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

API_PATHS = ("/v1/retrieve", "/retrieve", "/mcp")

_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "efficientrag_requests",
            "HTTP requests to the API, by endpoint and status",
            ["endpoint", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "efficientrag_request_seconds",
            "API request latency",
            ["endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.questions = Counter("efficientrag_questions", "questions answered", registry=r)
        self.batch_size = Histogram(
            "efficientrag_batch_size", "questions per retrieve_batch call", buckets=_BATCH_BUCKETS, registry=r
        )
        self.batch_seconds = Counter(
            "efficientrag_batch_seconds",
            "seconds the worker spent computing batches (its busy time: against wall time, how much "
            "of it the worker had work)",
            registry=r,
        )
        self.queue_depth = Gauge("efficientrag_queue_depth", "questions waiting for a batch", registry=r)
        self.in_flight = Gauge("efficientrag_in_flight", "questions in the running batch", registry=r)
        self.errors = Counter(
            "efficientrag_errors", "refused or failed requests, by kind", ["kind"], registry=r
        )
        self.abandoned = Counter(
            "efficientrag_abandoned",
            "questions whose answer nobody would read (client gone, or deadline passed), by where the "
            "server let go of them: queued (never computed), hop (its batch stopped at a hop boundary), "
            "finished (computed in full for nobody)",
            ["stage", "reason"],
            registry=r,
        )
        self.disconnects = Counter(
            "efficientrag_disconnects",
            "requests whose client closed the connection before its answer",
            registry=r,
        )
        self.rate = Gauge(
            "efficientrag_rate",
            "questions per second over the last batches taken together",
            registry=r,
        )
        self.cost_fixed = Gauge(
            "efficientrag_batch_cost_fixed_seconds",
            "admission's batch cost, fitted over the last batches: the seconds a batch takes whatever its size",
            registry=r,
        )
        self.cost_per_question = Gauge(
            "efficientrag_batch_cost_per_question_seconds",
            "admission's batch cost, fitted over the last batches: the seconds each question adds",
            registry=r,
        )

    def observe_request(self, path: str, status: int, seconds: float) -> None:
        if path not in API_PATHS:
            return
        self.requests.labels(path, str(status)).inc()
        self.latency.labels(path).observe(seconds)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class RequestMetrics:
    """ASGI middleware: each API request's status and latency (``Metrics.observe_request``), as
    sent, whoever sent it (a route, an exception handler, ``security.BodyCheck``); 500 when nothing
    was sent (an unhandled exception)."""

    def __init__(self, app: Any, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_counted(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            self.metrics.observe_request(scope.get("path", ""), status, time.perf_counter() - started)
