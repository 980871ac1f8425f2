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

        def metric(kind: Any, name: str, text: str, labels: tuple[str, ...] = (), **kw: Any) -> Any:
            return kind(f"efficientrag_{name}", text, list(labels), registry=self.registry, **kw)

        self.requests = metric(
            Counter, "requests", "HTTP requests to the API, by endpoint and status", ("endpoint", "status")
        )
        self.latency = metric(
            Histogram, "request_seconds", "API request latency", ("endpoint",), buckets=_LATENCY_BUCKETS
        )
        self.questions = metric(Counter, "questions", "questions answered")
        self.batch_size = metric(
            Histogram, "batch_size", "questions per retrieve_batch call", buckets=_BATCH_BUCKETS
        )
        self.batch_seconds = metric(
            Counter,
            "batch_seconds",
            "seconds the worker spent computing batches (its busy time: against wall time, how much "
            "of it the worker had work)",
        )
        self.queue_depth = metric(Gauge, "queue_depth", "questions waiting for a batch")
        self.in_flight = metric(Gauge, "in_flight", "questions in the running batch")
        self.errors = metric(Counter, "errors", "refused or failed requests, by kind", ("kind",))
        self.abandoned = metric(
            Counter,
            "abandoned",
            "questions whose answer nobody would read (client gone, or deadline passed), by where the "
            "server let go of them: queued (never computed), hop (its batch stopped at a hop boundary), "
            "finished (computed in full for nobody)",
            ("stage", "reason"),
        )
        self.disconnects = metric(
            Counter, "disconnects", "requests whose client closed the connection before its answer"
        )
        self.rate = metric(Gauge, "rate", "questions per second over the last batches taken together")
        cost = "admission's batch cost, fitted over the last batches: the seconds "
        self.cost_fixed = metric(Gauge, "batch_cost_fixed_seconds", cost + "a batch takes whatever its size")
        self.cost_per_question = metric(Gauge, "batch_cost_per_question_seconds", cost + "each question adds")

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
