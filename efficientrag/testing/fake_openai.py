"""A local OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

Real sockets on 127.0.0.1, so the real ``openai`` client, its HTTP stack and our retry code are all
exercised. It answers ``POST /v1/chat/completions``, ``POST /v1/completions`` and
``GET /v1/models`` in OpenAI's JSON shapes (usage always, logprobs when asked), with replies from
a scripted ``responder`` and faults injected on purpose:

- ``"500"``, ``"502"``, ``"503"``: server errors; ``"429"``: rate limit with ``Retry-After``;
- ``"malformed"``: a 200 whose JSON body is cut in half;
- ``"truncated"``: a reply cut short with ``finish_reason="length"``;
- ``"slow"``: the reply comes after ``slow_seconds`` (set it above the client's timeout);
- ``"reset"``: the connection is dropped (TCP reset) without a reply: a transient network failure;
- ``"400"``, ``"401"``: client errors (only by explicit script; they are not retryable).

A server that is down altogether (connections refused) is ``with srv.refusing(): ...``: the port is
closed inside the block and served again after it.

Faults come from an explicit per-request script (a list indexed by request number, or a callable)
or at random with ``fault_rate`` from a seeded RNG. ``latency`` is added to every request. A thread
per connection (and a deep listen backlog) keeps 64+ slow requests in flight at once.

The replies and their JSON are built in :mod:`efficientrag.testing.fake_completions`, the common
responders in :mod:`efficientrag.testing.fake_responders`, and the HTTP side (sockets, routing, the
network faults) is :mod:`efficientrag.testing.fake_http`; this module holds the server that ties
them together, and its command line.

In-process::

    with FakeOpenAIServer(rule_responder([(r"capital", "Paris")])) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x")

As a process (prints its base URL on the first stdout line, serves until SIGTERM/SIGINT)::

    python -m efficientrag.testing.fake_openai --port 0 --latency 0.3 --fault-rate 0.2 --seed 1 \\
        --script mypkg.responders:answer
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import random
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from efficientrag.testing.fake_completions import completion_json
from efficientrag.testing.fake_http import FakeHTTPServer, FakeOpenAIHandler
from efficientrag.testing.fake_responders import Responder, echo_responder

__all__ = [
    "DEFAULT_RANDOM_FAULTS",
    "FAULT_KINDS",
    "RETRYABLE_FAULTS",
    "FakeOpenAIServer",
    "FaultScript",
    "ReceivedRequest",
    "load_responder",
    "main",
]

RETRYABLE_FAULTS = ("500", "502", "503", "429", "malformed", "slow", "reset")
FAULT_KINDS = (*RETRYABLE_FAULTS, "truncated", "400", "401")
# Faults drawn at random unless told otherwise: the ones a client is expected to survive quickly.
DEFAULT_RANDOM_FAULTS = ("500", "502", "503", "429", "malformed")

FaultScript = Sequence["str | None"] | Callable[[int, str, dict[str, Any]], "str | None"]


@dataclass
class ReceivedRequest:
    index: int
    endpoint: str
    body: dict[str, Any]
    fault: str | None


class FakeOpenAIServer:
    """The server. ``faults`` scripts request ``i`` (counted over both POST endpoints, from 0) as
    ``faults[i]`` (None: no fault), or is a callable ``(i, endpoint, body) -> fault | None``;
    requests the script does not cover get a random fault with probability ``fault_rate``, drawn
    from ``fault_kinds`` by an RNG seeded with ``seed``. A 429 carries ``retry_after`` seconds in
    the ``retry_after_header`` header. ``require_api_key`` makes it answer 401 to any other key.
    A responder that raises is answered with a 400 (not retried), so a broken script fails fast.

    Args:
        responder: Makes the reply for a request body (None: :func:`echo_responder`).
        model: The model name reported (when the request names none) and listed by ``/v1/models``.
        host: The interface to listen on.
        port: The port (0: any free one; :meth:`start` sets the one taken).
        latency: Seconds added to every request.
        faults: The fault script: a list indexed by request number, or a callable.
        fault_rate: Probability of a random fault for a request the script does not cover.
        fault_kinds: The faults drawn at random.
        seed: Seed of the random faults.
        retry_after: Seconds a 429 asks the client to wait.
        retry_after_header: ``"retry-after"`` (seconds) or ``"retry-after-ms"``.
        slow_seconds: How long a ``"slow"`` fault holds its reply.
        require_api_key: Answer 401 to requests with any other bearer key (None: accept any).

    Raises:
        ValueError: An unknown fault kind or header, or ``fault_rate`` outside [0, 1].
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        model: str = "fake-model",
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        faults: FaultScript | None = None,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[str] = DEFAULT_RANDOM_FAULTS,
        seed: int = 0,
        retry_after: float = 1.0,
        retry_after_header: str = "retry-after",
        slow_seconds: float = 5.0,
        require_api_key: str | None = None,
    ) -> None:
        unknown = [k for k in fault_kinds if k not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kind(s) {unknown}; known: {list(FAULT_KINDS)}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate}")
        if retry_after_header not in ("retry-after", "retry-after-ms"):
            raise ValueError("retry_after_header must be 'retry-after' or 'retry-after-ms'")
        self.responder: Responder = responder or echo_responder
        self.model = model
        self.host = host
        self.port = port
        self.latency = latency
        self.faults = faults
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.retry_after = retry_after
        self.retry_after_header = retry_after_header
        self.slow_seconds = slow_seconds
        self.require_api_key = require_api_key
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset_stats()

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Start serving in a daemon thread (a started server is left as it is).

        Returns:
            The server itself; ``port`` and ``base_url`` now name the bound port.
        """
        if self._httpd is not None:
            return self
        self._stop.clear()
        self._httpd = FakeHTTPServer((self.host, self.port), FakeOpenAIHandler, self)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection (a stopped server is left as it is)."""
        if self._httpd is None:
            return
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    @contextlib.contextmanager
    def refusing(self) -> Iterator[FakeOpenAIServer]:
        """Down inside the block (a connection to its port is refused), up again on the same port after.

        Yields:
            The server, stopped.

        Raises:
            RuntimeError: The server was not started.
        """
        if self._httpd is None:
            raise RuntimeError("refusing() needs a started server (its port is what stays closed)")
        self.stop()
        try:
            yield self
        finally:
            self.start()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client (``http://host:port/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    # -- stats ------------------------------------------------------------------------------------

    def reset_stats(self) -> None:
        """Forget the requests counted and received so far (request numbers start at 0 again)."""
        with self._lock:
            self.requests_by_endpoint: Counter = Counter()
            self.faults_injected: Counter = Counter()
            self.in_flight = 0
            self.max_in_flight = 0
            self.received: list[ReceivedRequest] = []
            self._next_index = 0

    @property
    def total_requests(self) -> int:
        """POST requests received since the last reset."""
        with self._lock:
            return sum(self.requests_by_endpoint.values())

    def request_bodies(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        """The JSON bodies received, in arrival order, so a test can check what was sent.

        Args:
            endpoint: Only ``"chat"`` or ``"completions"`` requests (None: both).

        Returns:
            The bodies.
        """
        with self._lock:
            return [r.body for r in self.received if endpoint is None or r.endpoint == endpoint]

    def stats(self) -> dict[str, Any]:
        """Counts since the last reset.

        Returns:
            ``requests`` per endpoint, ``total_requests``, ``faults`` injected per kind,
            ``max_in_flight`` and ``in_flight``.
        """
        with self._lock:
            return {
                "requests": dict(self.requests_by_endpoint),
                "total_requests": sum(self.requests_by_endpoint.values()),
                "faults": dict(self.faults_injected),
                "max_in_flight": self.max_in_flight,
                "in_flight": self.in_flight,
            }

    # -- request handling (called from handler threads) ------------------------------------------

    def _begin(self, endpoint: str, body: dict[str, Any]) -> ReceivedRequest:
        with self._lock:
            index = self._next_index
            self._next_index += 1
            self.requests_by_endpoint[endpoint] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = self._pick_fault(index, endpoint, body)
            if fault is not None:
                self.faults_injected[fault] += 1
            record = ReceivedRequest(index, endpoint, body, fault)
            self.received.append(record)
            return record

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _pick_fault(self, index: int, endpoint: str, body: dict[str, Any]) -> str | None:
        fault: str | None = None
        scripted = False
        if callable(self.faults):
            fault, scripted = self.faults(index, endpoint, body), True
        elif self.faults is not None and index < len(self.faults):
            fault, scripted = self.faults[index], True
        if not scripted and self.fault_rate > 0 and self.fault_kinds:
            # Draw both numbers every time, so the fault sequence depends only on the seed.
            roll, kind = self._rng.random(), self._rng.choice(self.fault_kinds)
            fault = kind if roll < self.fault_rate else None
        if fault is not None and fault not in FAULT_KINDS:
            raise ValueError(f"unknown fault {fault!r} in script; known: {list(FAULT_KINDS)}")
        return fault

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; True if it is."""
        return self._stop.wait(seconds) if seconds > 0 else self._stop.is_set()

    def completion_body(
        self, endpoint: str, request: dict[str, Any], index: int, *, truncate: bool = False
    ) -> dict[str, Any]:
        """The OpenAI JSON body answering one request (stop sequences and ``max_tokens`` applied).

        Args:
            endpoint: ``"chat"`` or ``"completions"``.
            request: The request body.
            index: The request's number (in the response id).
            truncate: Cut the reply to half its tokens with ``finish_reason="length"``.

        Returns:
            A ``chat.completion`` or ``text_completion`` object, usage and (when asked) logprobs included.

        Raises:
            ValueError: A scripted reply's tokens do not join to its text.
        """
        reply = self.responder(request)
        return completion_json(reply, endpoint, request, index, default_model=self.model, truncate=truncate)

    def models_body(self) -> dict[str, Any]:
        """The ``GET /v1/models`` answer.

        Returns:
            A list object naming the one model.
        """
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "efficientrag-fake"}],
        }


# -- command line ---------------------------------------------------------------------------------


def load_responder(spec: str) -> Responder:
    """``"pkg.module:name"`` (or ``"pkg.module.name"``) -> that callable."""
    module_name, sep, attr = spec.partition(":")
    if not sep:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"--script {spec!r}: expected 'module:callable'")
    obj = getattr(importlib.import_module(module_name), attr)
    if not callable(obj):
        raise ValueError(f"--script {spec!r} is not callable")
    return obj


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible server for tests and benchmarks.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument(
        "--fault-kinds",
        default=",".join(DEFAULT_RANDOM_FAULTS),
        help=f"comma-separated, from {','.join(FAULT_KINDS)}",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--script", default=None, help="python-importable responder, 'module:callable'")
    parser.add_argument("--stats-file", default=None, help="write the server's stats as JSON on exit")
    args = parser.parse_args(argv)

    responder = load_responder(args.script) if args.script else None
    server = FakeOpenAIServer(
        responder,
        model=args.model,
        host=args.host,
        port=args.port,
        latency=args.latency,
        fault_rate=args.fault_rate,
        fault_kinds=[k for k in args.fault_kinds.split(",") if k],
        seed=args.seed,
        retry_after=args.retry_after,
        slow_seconds=args.slow_seconds,
    )
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with server:
        print(server.base_url, flush=True)
        while not done.wait(0.2):
            pass
    if args.stats_file:
        with open(args.stats_file, "w", encoding="utf-8") as fh:
            json.dump(server.stats(), fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
