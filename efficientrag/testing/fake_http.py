"""The HTTP side of the fake OpenAI server: sockets, routing, and faults acted out on the wire.

:class:`~efficientrag.testing.fake_openai.FakeOpenAIServer` decides what each request gets (its
fault, its reply body) and keeps the counts; the handler here reads requests, answers in OpenAI's
error and JSON shapes, and plays the network faults (a dropped connection, a cut body, a slow
reply). One thread per connection and a deep listen backlog keep 64+ slow requests in flight.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


class ReceivedLike(Protocol):
    index: int
    fault: str | None


class FakeOpenAIServer(Protocol):
    """What the handler asks of the server that decides each request's fate. A protocol, not an
    import of :class:`~efficientrag.testing.fake_openai.FakeOpenAIServer`: that module imports this
    one, and ``python -m efficientrag.testing.fake_openai`` must not import its module twice."""

    latency: float
    require_api_key: str | None
    retry_after: float
    retry_after_header: str
    slow_seconds: float

    def _begin(self, endpoint: str, body: dict[str, Any]) -> ReceivedLike: ...

    def _end(self) -> None: ...

    def _wait(self, seconds: float) -> bool: ...

    def completion_body(
        self, endpoint: str, request: dict[str, Any], index: int, *, truncate: bool = False
    ) -> dict[str, Any]: ...

    def models_body(self) -> dict[str, Any]: ...


class FakeHTTPServer(ThreadingHTTPServer):
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


class FakeOpenAIHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "efficientrag-fake-openai/1"
    # Idle keep-alive connections give up after this, so their threads do not linger.
    timeout = 30
    # Buffered writes: headers and body leave together at flush() instead of as two small packets.
    wbufsize = 1 << 16
    server: FakeHTTPServer

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
