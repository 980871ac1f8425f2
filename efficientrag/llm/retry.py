"""When a failed LLM request is worth another try, and how long to wait: the transient kinds of
failure, an endpoint that cannot be reached at all, a server's ``Retry-After``, and exponential
backoff with jitter otherwise."""

from __future__ import annotations

import email.utils
import math
import random
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from efficientrag.llm.config import LLMConfig

RETRYABLE = frozenset({"rate_limit", "server_error", "timeout", "connection", "malformed"})
# Pause before the short retries of an unreachable endpoint (a server that is just starting).
UNREACHABLE_RETRY_DELAY_S = 0.5


def unreachable_reason(exc: BaseException) -> str | None:
    """Why a connection could not be opened at all ("connection refused", "unknown host ..."), or
    None when the error is something else (a dropped connection, a timeout: those are transient).

    The SDK wraps the transport's ConnectError (httpx or httpx2, by SDK version) around the socket
    error, so the cause chain is walked instead of matching one library's classes.
    """
    seen: set[int] = set()
    node: BaseException | None = exc
    connect_error: str | None = None
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, ConnectionRefusedError):
            return "connection refused"
        if isinstance(node, socket.gaierror):
            return f"unknown host: {node.strerror or node}"
        if type(node).__name__ == "ConnectError" and connect_error is None:
            connect_error = str(node) or "connection failed"
        node = node.__cause__ or node.__context__
    return connect_error


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), else None.

    Args:
        headers: The response headers (lower-case names, as httpx gives them).

    Returns:
        The delay the server asked for in seconds, or None when it asked for none readable.
    """
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            ms = float(value)
            if math.isfinite(ms):
                return ms / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay(cfg: LLMConfig, attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Seconds to wait before retrying a failed attempt.

    Args:
        cfg: The backoff settings (``backoff_base``, ``backoff_max``, ``max_retry_after``).
        attempt: The failed attempt, from 0.
        retry_after: The delay the server asked for (None: back off exponentially).
        rng: The jitter's random source.

    Returns:
        The server's delay (capped at ``cfg.max_retry_after``), else half the exponential step
        plus up to half of it at random.
    """
    if retry_after is not None:
        return min(max(retry_after, 0.0), cfg.max_retry_after)
    ceiling = min(cfg.backoff_max, cfg.backoff_base * 2.0**attempt)
    # "Equal jitter": at least half the exponential step, so retries keep backing off.
    return ceiling / 2 + rng.uniform(0, ceiling / 2)
