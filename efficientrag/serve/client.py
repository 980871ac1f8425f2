"""``RemoteEfficientRAG``: the library's ``retrieve`` / ``retrieve_batch`` over HTTP, sync and async.

It returns the library's ``RetrievalResult`` (chunks, scores, typed trace, counters) rebuilt from
``/v1/retrieve`` (``wire``), so code written for a local ``EfficientRAG``, the LangChain and
LlamaIndex retrievers included, runs unchanged against a server in another process or machine.
Bad questions fail here first with the library's own message; a server's refusal raises
``RemoteRequestError`` (a ``ValueError``, as the library raises for bad input) with its status and
field; a busy server (503 with Retry-After) is retried a few times before ``RemoteServerError``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from efficientrag.closing import Closing
from efficientrag.errors import EfficientRAGError, InvalidArgumentError
from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.pipeline.inputs import check_questions
from efficientrag.serve.wire import result_from_json

API_KEY_ENV = "EFFICIENTRAG_API_KEY"
_MAX_RETRY_WAIT_S = 5.0


class RemoteRequestError(EfficientRAGError, ValueError):
    """The server refused the request (4xx): ``status`` and the ``field`` it named."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


class RemoteServerError(EfficientRAGError, RuntimeError):
    """The server could not answer (5xx: busy, deadline, backend down); ``status`` says which."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


class RemoteEfficientRAG(Closing):
    """A served EfficientRAG loop, with the library's signatures.

    Args:
        url: the server's base URL, e.g. ``http://127.0.0.1:8000``.
        api_key: the server's bearer token; default ``$EFFICIENTRAG_API_KEY`` when set.
        settings: loop settings sent with every request (the server's allow-list: ``top_k``,
            ``chunk_budget``, ``floor_k`` ...); None: the server's own.
        timeout: seconds for one HTTP request.
        batch_size: questions per request in ``retrieve_batch`` (at most the server's
            ``serve.max_questions``); a longer list is sent in several requests.
        retries: how many times a 503 (busy or backend unavailable) is retried after its
            Retry-After (at most 5 s each).
        trace: ask for the typed trace (the adapters read the hop that kept each chunk from it).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        settings: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        batch_size: int = 64,
        retries: int = 2,
        trace: bool = True,
    ) -> None:
        if batch_size < 1 or retries < 0:
            raise InvalidArgumentError(
                f"batch_size must be >= 1 and retries >= 0, got {batch_size}, {retries}"
            )
        self.url = url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.settings = dict(settings or {})
        self.timeout = timeout
        self.batch_size = batch_size
        self.retries = retries
        self.trace = trace
        self._client: httpx.Client | None = None
        self._async: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None

    def __repr__(self) -> str:  # never the token
        return f"RemoteEfficientRAG({self.url!r})"

    # ----------------------------------------------------------------------------- sync

    def retrieve(self, question: str) -> RetrievalResult:
        """Retrieve for one question on the server.

        Args:
            question: The question.

        Returns:
            The library's result (chunks, scores, trace, counters).

        Raises:
            ValueError: A question is empty or not a string (checked before any request).
            RemoteRequestError: The server refused the request (4xx).
            RemoteServerError: The server could not answer (5xx, after retrying a 503).
        """
        return self.retrieve_batch([question])[0]

    def retrieve_batch(self, questions: Sequence[str]) -> list[RetrievalResult]:
        """Retrieve for many questions, ``batch_size`` per request (the server batches them further).

        Args:
            questions: The questions.

        Returns:
            One result per question, in order.

        Raises:
            ValueError: A question is empty or not a string (checked before any request).
            RemoteRequestError: The server refused the request (4xx).
            RemoteServerError: The server could not answer (5xx, after retrying a 503).
        """
        return [result for body in self._bodies(questions) for result in self._results(self._post(body))]

    def close(self) -> None:
        """Close the sync HTTP connection (a later call opens a new one)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = httpx.Client(base_url=self.url, headers=self._headers, timeout=self.timeout)
        for attempt in range(self.retries + 1):
            reply = self._client.post("/v1/retrieve", json=body)
            wait = _retry_wait(reply, attempt, self.retries)
            if wait is None:
                return _checked(reply)
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    # ----------------------------------------------------------------------------- async

    async def aretrieve(self, question: str) -> RetrievalResult:
        """:meth:`retrieve` without blocking the event loop: the same result, the same errors.

        Args:
            question: The question.

        Returns:
            The library's result.
        """
        return (await self.aretrieve_batch([question]))[0]

    async def aretrieve_batch(self, questions: Sequence[str]) -> list[RetrievalResult]:
        """:meth:`retrieve_batch` without blocking the event loop: the same results, the same errors.

        Args:
            questions: The questions.

        Returns:
            One result per question, in order.
        """
        return [
            result for body in self._bodies(questions) for result in self._results(await self._apost(body))
        ]

    async def aclose(self) -> None:
        """Close the async HTTP connection (a later call opens a new one)."""
        if self._async is not None:
            await self._async[1].aclose()
            self._async = None

    async def _apost(self, body: dict[str, Any]) -> dict[str, Any]:
        client = self._async_client()
        for attempt in range(self.retries + 1):
            reply = await client.post("/v1/retrieve", json=body)
            wait = _retry_wait(reply, attempt, self.retries)
            if wait is None:
                return _checked(reply)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _async_client(self) -> httpx.AsyncClient:
        """One client per event loop (an httpx.AsyncClient cannot move between loops)."""
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (
                loop,
                httpx.AsyncClient(base_url=self.url, headers=self._headers, timeout=self.timeout),
            )
        return self._async[1]

    # ----------------------------------------------------------------------------- shared

    def _bodies(self, questions: Sequence[str]) -> list[dict[str, Any]]:
        """The request bodies for ``questions``, ``batch_size`` each, once every question is checked."""
        check_questions(questions)
        qs = list(questions)
        return [
            {"questions": qs[lo : lo + self.batch_size], "settings": self.settings, "trace": self.trace}
            for lo in range(0, len(qs), self.batch_size)
        ]

    def _results(self, reply: dict[str, Any]) -> list[RetrievalResult]:
        rows = reply.get("results")
        if not isinstance(rows, list):
            raise RemoteServerError(200, "results", f"{self.url}: the reply has no results list")
        return [result_from_json(row, where=f"{self.url} results[{i}]") for i, row in enumerate(rows)]


def _retry_wait(reply: httpx.Response, attempt: int, retries: int) -> float | None:
    """Seconds to wait before retrying a 503, or None to take the reply as it is."""
    if reply.status_code != 503 or attempt >= retries:
        return None
    try:
        return min(_MAX_RETRY_WAIT_S, max(0.0, float(reply.headers.get("Retry-After", "1"))))
    except ValueError:
        return 1.0


def _checked(reply: httpx.Response) -> dict[str, Any]:
    try:
        body = reply.json()
    except ValueError:
        body = {}
    if reply.is_success and isinstance(body, dict):
        return body
    detail = body.get("detail") if isinstance(body, dict) else None
    field = body.get("field", "") if isinstance(body, dict) else ""
    message = f"{reply.request.url}: {reply.status_code} {detail or reply.reason_phrase}"
    if 400 <= reply.status_code < 500:
        raise RemoteRequestError(reply.status_code, field, message)
    raise RemoteServerError(reply.status_code, field, message)
