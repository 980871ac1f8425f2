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
import hashlib
import importlib
import json
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RETRYABLE_FAULTS = ("500", "502", "503", "429", "malformed", "slow", "reset")
FAULT_KINDS = (*RETRYABLE_FAULTS, "truncated", "400", "401")
# Faults drawn at random unless told otherwise: the ones a client is expected to survive quickly.
DEFAULT_RANDOM_FAULTS = ("500", "502", "503", "429", "malformed")

_TOKEN_RE = re.compile(r"\s*\S+|\s+")


@dataclass
class ScriptedReply:
    """A scripted answer. ``token_logprobs`` (token, logprob) pairs must join to ``text``; without
    them the text is split into whitespace-led tokens with deterministic logprobs. Token counts
    default to those tokens (the prompt: the tokens of every message).

    Attributes:
        text: The reply.
        token_logprobs: ``(token, logprob)`` pairs that join to ``text`` (None: made up).
        finish_reason: The reported finish reason (``"length"`` makes the client see a cut reply).
        prompt_tokens: The reported prompt tokens (None: counted from the request).
        completion_tokens: The reported completion tokens (None: counted from the reply).
    """

    text: str
    token_logprobs: Sequence[tuple[str, float]] | None = None
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


Responder = Callable[[dict[str, Any]], "str | ScriptedReply"]
FaultScript = Sequence["str | None"] | Callable[[int, str, dict[str, Any]], "str | None"]


@dataclass
class ReceivedRequest:
    index: int
    endpoint: str
    body: dict[str, Any]
    fault: str | None


# -- the fake "model" -----------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Whitespace-led tokens (" Paris"); ``"".join(tokenize(t)) == t``."""
    return _TOKEN_RE.findall(text)


def fake_logprob(token: str) -> float:
    """A deterministic logprob in (-3, 0] for a token, so tests can predict it."""
    digest = hashlib.sha256(token.encode("utf-8")).digest()
    return -(int.from_bytes(digest[:4], "big") % 3000) / 1000.0


def content_text(content: Any) -> str:
    """Text of a message content: a string, or a list of parts ({"type": "text", "text": ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def request_text(request: dict[str, Any]) -> str:
    """The last user message of a chat request, or the prompt of a completions request."""
    if "messages" in request:
        for msg in reversed(request.get("messages") or []):
            if isinstance(msg, dict) and msg.get("role") == "user":
                return content_text(msg.get("content"))
        return ""
    prompt = request.get("prompt", "")
    if isinstance(prompt, list):
        prompt = prompt[0] if prompt and isinstance(prompt[0], str) else ""
    return prompt if isinstance(prompt, str) else ""


def prompt_token_count(request: dict[str, Any]) -> int:
    if "messages" in request:
        return sum(
            len(tokenize(content_text(m.get("content"))))
            for m in request.get("messages") or []
            if isinstance(m, dict)
        )
    return len(tokenize(request_text(request)))


def echo_responder(request: dict[str, Any]) -> str:
    """The default responder: answers ``"echo: "`` plus the request's text, so any call succeeds.

    Args:
        request: The request body (chat or completions).

    Returns:
        ``"echo: "`` + the last user message (or the prompt).
    """
    return f"echo: {request_text(request)}"


class QueueResponder:
    """Replies in order, one per request; when the queue is empty, ``then`` answers (or an error)."""

    def __init__(self, replies: Iterable[str | ScriptedReply], *, then: Responder | None = None) -> None:
        self._replies = list(replies)
        self._then = then
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def __call__(self, request: dict[str, Any]) -> str | ScriptedReply:
        with self._lock:
            if self._replies:
                return self._replies.pop(0)
        if self._then is None:
            raise LookupError("scripted reply queue is exhausted")
        return self._then(request)


def queue_responder(
    replies: Iterable[str | ScriptedReply], *, then: Responder | None = None
) -> QueueResponder:
    """A responder that answers with ``replies`` in order, one per request (a test's exact script).

    Args:
        replies: The replies, in request order.
        then: Answers once the queue is empty (None: an exhausted queue answers 400).

    Returns:
        The responder; its ``remaining`` says how many replies are left.
    """
    return QueueResponder(replies, then=then)


RuleReply = str | ScriptedReply | Callable[[re.Match, dict[str, Any]], "str | ScriptedReply"]


def rule_responder(
    rules: Sequence[tuple[str | re.Pattern, RuleReply]], *, default: Responder = echo_responder
) -> Responder:
    """First rule whose regex is found in the last user message (or prompt) answers; a callable
    reply gets the match and the request.

    Args:
        rules: ``(regex, reply)`` pairs, tried in order; a reply is a string, a
            :class:`ScriptedReply`, or a callable ``(match, request) -> reply``.
        default: Answers when no rule matches.

    Returns:
        The responder.
    """
    compiled = [(re.compile(p, re.S) if isinstance(p, str) else p, reply) for p, reply in rules]

    def respond(request: dict[str, Any]) -> str | ScriptedReply:
        text = request_text(request)
        for pattern, reply in compiled:
            match = pattern.search(text)
            if match:
                return reply(match, request) if callable(reply) else reply
        return default(request)

    return respond


# -- server ---------------------------------------------------------------------------------------


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
        self._httpd: _HTTPServer | None = None
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
        self._httpd = _HTTPServer((self.host, self.port), _Handler, self)
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
        if isinstance(reply, str):
            reply = ScriptedReply(reply)
        if reply.token_logprobs is not None:
            tokens = [str(t) for t, _ in reply.token_logprobs]
            lps = [float(lp) for _, lp in reply.token_logprobs]
            if "".join(tokens) != reply.text:
                raise ValueError("ScriptedReply.token_logprobs tokens do not join to its text")
        else:
            tokens = tokenize(reply.text)
            lps = [fake_logprob(t) for t in tokens]
        finish = reply.finish_reason
        tokens, lps, finish = _apply_stop(tokens, lps, finish, request.get("stop"))
        limit = request.get("max_tokens") or request.get("max_completion_tokens")
        if isinstance(limit, int) and len(tokens) > limit:
            tokens, lps, finish = tokens[:limit], lps[:limit], "length"
        if truncate:
            keep = max(1, len(tokens) // 2) if len(tokens) > 1 else 0
            tokens, lps, finish = tokens[:keep], lps[:keep], "length"
        text = "".join(tokens)
        prompt_tokens = (
            reply.prompt_tokens if reply.prompt_tokens is not None else prompt_token_count(request)
        )
        completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else len(tokens)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = request.get("model") or self.model
        created = int(time.time())
        if endpoint == "chat":
            logprobs = None
            if request.get("logprobs"):
                k = int(request.get("top_logprobs") or 0)
                logprobs = {
                    "content": [
                        {
                            "token": t,
                            "logprob": lp,
                            "bytes": list(t.encode("utf-8")),
                            "top_logprobs": [
                                {"token": at, "logprob": alp, "bytes": list(at.encode("utf-8"))}
                                for at, alp in _alternatives(t, lp, k)
                            ],
                        }
                        for t, lp in zip(tokens, lps, strict=True)
                    ],
                    "refusal": None,
                }
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": logprobs,
                "finish_reason": finish,
            }
            return {
                "id": f"chatcmpl-fake-{index}",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [choice],
                "usage": usage,
            }
        logprobs = None
        if request.get("logprobs") is not None:
            k = max(1, int(request["logprobs"]))
            offsets, pos = [], len(request_text(request))
            for t in tokens:
                offsets.append(pos)
                pos += len(t)
            logprobs = {
                "tokens": tokens,
                "token_logprobs": lps,
                "top_logprobs": [dict(_alternatives(t, lp, k)) for t, lp in zip(tokens, lps, strict=True)],
                "text_offset": offsets,
            }
        return {
            "id": f"cmpl-fake-{index}",
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}],
            "usage": usage,
        }

    def models_body(self) -> dict[str, Any]:
        """The ``GET /v1/models`` answer.

        Returns:
            A list object naming the one model.
        """
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "efficientrag-fake"}],
        }


def _alternatives(token: str, logprob: float, k: int) -> list[tuple[str, float]]:
    """The chosen token first, then ``k - 1`` made-up, less likely alternatives."""
    if k <= 0:
        return []
    return [(token, logprob)] + [(f"{token}~{i}", round(logprob - 0.5 - i, 3)) for i in range(1, k)]


def _apply_stop(
    tokens: list[str], lps: list[float], finish: str, stop: Any
) -> tuple[list[str], list[float], str]:
    stops = [stop] if isinstance(stop, str) else [s for s in (stop or []) if isinstance(s, str) and s]
    if not stops:
        return tokens, lps, finish
    text = "".join(tokens)
    hits = [i for i in (text.find(s) for s in stops) if i >= 0]
    if not hits:
        return tokens, lps, finish
    cut = min(hits)
    kept, length = 0, 0
    while kept < len(tokens) and length + len(tokens[kept]) <= cut:
        length += len(tokens[kept])
        kept += 1
    return tokens[:kept], lps[:kept], "stop"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The default backlog (5) drops bursts of connections; benchmarks open 64 at once.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], handler: type, fake: FakeOpenAIServer) -> None:
        self.fake = fake
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Wake handler threads blocked on idle keep-alive connections so they exit."""
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "efficientrag-fake-openai/1"
    # Idle keep-alive connections give up after this, so their threads do not linger.
    timeout = 30
    # Buffered writes: headers and body leave together at flush() instead of as two small packets.
    wbufsize = 1 << 16
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Replies are small writes; without this, Nagle's algorithm meets the client's delayed ACK
        # and every reply waits ~40 ms.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silent: tests and benchmarks read stats, not access logs."""

    # -- routing ----------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self._route() == "models":
            self._send_json(200, self.server.fake.models_body())
        else:
            self._send_error(404, f"no route GET {self.path}", "invalid_request_error", "not_found")

    def do_POST(self) -> None:
        fake = self.server.fake
        endpoint = self._route()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if endpoint not in ("chat", "completions"):
            self._send_error(404, f"no route POST {self.path}", "invalid_request_error", "not_found")
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            self._send_error(400, f"request body is not valid JSON: {exc}", "invalid_request_error", None)
            return
        record = fake._begin(endpoint, body)
        try:
            self._serve(fake, endpoint, body, record.fault, record.index)
        finally:
            fake._end()

    def _route(self) -> str | None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1"):
            path = path[3:]
        return {"/chat/completions": "chat", "/completions": "completions", "/models": "models"}.get(path)

    # -- replies ----------------------------------------------------------------------------------

    def _serve(
        self, fake: FakeOpenAIServer, endpoint: str, body: dict, fault: str | None, index: int
    ) -> None:
        if fake._wait(fake.latency):
            return
        if fake.require_api_key is not None:
            auth = self.headers.get("Authorization", "")
            if auth != f"Bearer {fake.require_api_key}":
                self._send_error(
                    401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
                )
                return
        if fault in ("500", "502", "503"):
            self._send_error(int(fault), f"fake server error {fault}", "server_error", None)
            return
        if fault == "429":
            seconds = fake.retry_after
            header = (
                ("retry-after-ms", f"{seconds * 1000:g}")
                if fake.retry_after_header == "retry-after-ms"
                else ("retry-after", f"{seconds:g}")
            )
            self._send_error(429, "Rate limit reached (fake).", "requests", "rate_limit_exceeded", [header])
            return
        if fault == "400":
            self._send_error(400, "fake bad request", "invalid_request_error", None)
            return
        if fault == "401":
            self._send_error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
            return
        if fault == "slow" and fake._wait(fake.slow_seconds):
            return
        if fault == "reset":
            # SO_LINGER 0: close() sends a TCP reset, as a crashed proxy or server would.
            with contextlib.suppress(OSError):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.server.shutdown_request(self.connection)
            return
        try:
            reply = fake.completion_body(endpoint, body, index, truncate=fault == "truncated")
        except Exception as exc:  # a broken test script: fail fast with a non-retryable status
            self._send_error(400, f"fake server responder failed: {exc!r}", "invalid_request_error", None)
            return
        if fault == "malformed":
            data = json.dumps(reply).encode("utf-8")
            self._send_bytes(200, data[: len(data) // 2], "application/json")
            return
        self._send_json(200, reply)

    def _send_error(
        self,
        status: int,
        message: str,
        err_type: str,
        code: str | None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        body = {"error": {"message": message, "type": err_type, "param": None, "code": code}}
        self._send_bytes(status, json.dumps(body).encode("utf-8"), "application/json", headers)

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(body).encode("utf-8"), "application/json")

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # The client gave up (e.g. timed out on a slow reply); nothing to answer.
            self.close_connection = True


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
