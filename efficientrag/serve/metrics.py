"""Prometheus metrics of one server (``GET /metrics``).

A registry of its own per app, not prometheus_client's global one, so two apps in one process (the
tests, an embedding program) count separately. The endpoint label only takes the API's own paths,
so random paths cannot grow the series without bound.
"""

from __future__ import annotations

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
            "questions per second over the last batches (admission's estimate)",
            registry=r,
        )

    def observe_request(self, path: str, status: int, seconds: float) -> None:
        if path not in API_PATHS:
            return
        self.requests.labels(path, str(status)).inc()
        self.latency.labels(path).observe(seconds)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
