"""Settings of ``efficientrag serve``: where it listens and how much it takes at once.

They live under ``serve:`` of an experiment preset (``ServeExperimentConfig``), so one YAML names
the data, the backend, the models and the service, and ``serve.max_batch=16`` overrides work like
any other key. Nothing here is settable by a request: requests get only ``ALLOWED_SETTINGS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from efficientrag.experiment.config import ExperimentConfig
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import (
    EXPOSED_OVER_HTTP,
    SettingError,
    bounded,
    check_settings,
    settings_with,
)

# The loop settings a request may change for itself, as ``EfficientRAGConfig`` declares them
# (efficientrag.serve.requests checks them). None of them names a file, a model folder, a device or a
# backend.
ALLOWED_SETTINGS = settings_with(EfficientRAGConfig, EXPOSED_OVER_HTTP)


@dataclass
class ServeConfig:
    """``host`` is loopback unless told otherwise: the API has no token unless
    ``EFFICIENTRAG_API_KEY`` is set, so exposing it is a decision, not a default.

    Attributes:
        host: The interface to listen on.
        port: The port (0: any free one).
        max_wait_ms: Milliseconds the first waiting request waits for others to join its batch.
        max_batch: Questions per batch at most.
        max_queue: Questions waiting for a batch at most, a hard cap on memory; beyond it a
            request gets 503 with Retry-After. Admission by deadline refuses long before it under
            overload (:mod:`efficientrag.serve.admission`).
        max_questions: Questions per ``/v1/retrieve`` request (and per MCP call) at most.
        max_queries: Queries per Search-R1 ``/retrieve`` request at most: a rollout's whole batch,
            split into the batcher's own batches.
        max_body_bytes: Bytes of request body at most.
        deadline_s: Seconds within which a ``/v1/retrieve`` or MCP request must be answered when it
            names no deadline of its own (``deadline_ms`` or the ``X-Envoy-Expected-Rq-Timeout-Ms``
            header; a request may ask for less, never more). A Search-R1 ``/retrieve`` request that
            names none has none: its client waits for its rollout's batch however long it takes. A request the queue ahead cannot let through in time is
            refused at once with 503; one that runs late gets 504 at its deadline. The default
            sits below the 30 s client timeout of RL trainers (verl's SearchTool), so that they
            read a refusal instead of timing out.
        workers: Server processes sharing the port, each with its own loaded loop
            (:mod:`efficientrag.serve.workers`).
        threads: Torch threads per process (0: the process's cores divided by ``workers``).
        mcp: Mount the MCP endpoint (``/mcp``, the ``retrieve`` tool; needs the ``mcp`` package).
        max_top_k: The largest ``top_k`` (and ``first_top_k``) a request may ask for.
        max_hops: The largest ``max_hops`` a request may ask for.
        probe_timeout_s: Seconds a readiness probe of the backend may take before ``/readyz``
            reports it down.
        cors_origins: Origins allowed by CORS (empty: CORS off; ``"*"`` is refused).
        access_log: Log every request.
        trim_memory: After each batch, hand the memory it freed back to the OS (glibc's
            ``malloc_trim``), so that a long-running server's RSS stays level
            (:mod:`efficientrag.serve.memory`).
        warmup: Before serving, run four questions alone and together and record what the two
            batches cost, so that admission plans the first requests with a measured cost.
        queue_target_s: The sojourn a request that names no deadline may have in the queue under
            overload: once the oldest waiting request's sojourn has stood above it for
            ``queue_interval_s``, such requests are admitted only if they can be answered within
            it (else 503 at once), served newest first, and sent back (503) past it
            (:mod:`efficientrag.serve.controlled_delay`).
        queue_interval_s: How long the sojourn must stand above ``queue_target_s`` to count as
            overload rather than a burst; an interval with no one refused ends it.
        bulk_queries: A request that names no deadline and holds at least this many queries is a
            bulk request (a Search-R1 rollout's batch, whose client waits however long it takes):
            it is never refused or sent back for the queue's delay, only by ``max_queue``.
    """

    host: str = "127.0.0.1"
    port: int = bounded(8000, low=0, high=65535)
    # Micro-batching: the first waiting request waits at most max_wait_ms for others to join it;
    # a batch holds at most max_batch questions.
    max_wait_ms: float = bounded(10.0, low=0.0)
    max_batch: int = bounded(32, low=1)
    # Questions waiting for a batch (not yet running); a request that would exceed it gets 503 with
    # Retry-After, so memory stays bounded however many clients call. Under overload the deadline
    # refuses first; this is the cap behind it.
    max_queue: int = bounded(4096, low=1)
    # One request: at most this many questions (/v1/retrieve, MCP) or queries (Search-R1
    # /retrieve, a rollout's batch), this many bytes of body.
    max_questions: int = bounded(64, low=1)
    max_queries: int = bounded(2048, low=1)
    max_body_bytes: int = bounded(1_000_000, low=1)
    # A request must be answered within this many seconds unless it asks for less: what the queue
    # cannot let through in time is refused at once (503), what runs late gets 504.
    deadline_s: float = bounded(25.0, above=0.0)
    # Processes sharing the port (each loads the loop) and torch threads per process (0: auto).
    workers: int = bounded(1, low=1)
    threads: int = bounded(0, low=0)
    # The MCP endpoint at /mcp (the `retrieve` tool).
    mcp: bool = True
    # Caps on what a request may ask of the loop (memory and time per question).
    max_top_k: int = bounded(100, low=1)
    max_hops: int = bounded(8, low=1)
    # Seconds a readiness probe of the backend may take before /readyz reports it down.
    probe_timeout_s: float = bounded(5.0, above=0.0)
    # Origins allowed by CORS (browser pages on other sites); empty: CORS off.
    cors_origins: list[str] = field(default_factory=list)
    access_log: bool = True
    # glibc keeps what a batch freed; without a trim the RSS climbs for as long as the server runs.
    trim_memory: bool = True
    # A cold server plans with the cost of a warm-up (one question, then four) measured before the
    # port serves: without it, the first requests are admitted on the queue's cap alone.
    warmup: bool = True
    # Controlled delay for requests that name no deadline (their callers' timeouts are not told):
    # the target sojourn under overload, and how long it must stand to be overload.
    queue_target_s: float = bounded(8.0, above=0.0)
    queue_interval_s: float = bounded(4.0, above=0.0)
    # A request with no deadline and at least this many queries is a rollout's batch: never shed.
    bulk_queries: int = bounded(8, low=2)

    def __post_init__(self) -> None:
        check_settings(self)
        if "*" in self.cors_origins:
            raise SettingError("cors_origins: list the origins; '*' would let any web page call the API")


@dataclass
class ServeExperimentConfig(ExperimentConfig):
    """An experiment preset plus its ``serve:`` section."""

    serve: ServeConfig = field(default_factory=ServeConfig)
