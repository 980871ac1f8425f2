"""Async client for OpenAI-compatible chat and completions endpoints (OpenAI, vLLM, Ollama, ...).

Built on ``openai.AsyncOpenAI`` with the SDK's own retries switched off, so the retry policy is
this module's and shows in the usage counters: exponential backoff with jitter on 429 (honouring
``Retry-After`` / ``retry-after-ms``), 5xx, timeouts, dropped connections and unparseable bodies; no
retry on other 4xx. An endpoint that cannot be reached at all (connection refused, unknown host) is
not a transient failure: it gets ``unreachable_retries`` short retries (for a server that is just
starting), then :class:`EndpointUnreachableError` names it, instead of minutes of backoff per request. Concurrency is bounded by a semaphore; with ``cache_dir`` set, finished
responses are kept on disk and a repeated request makes no HTTP call at all.

One :class:`AsyncLLMClient` belongs to one event loop. Scripts that are not async use
:class:`LLMClient`, which runs its own loop in a background thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import random
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import openai

from efficientrag.closing import Closing
from efficientrag.llm.cache import ResponseCache, cache_key
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.errors import (
    EndpointUnreachableError,
    LLMAuthError,
    LLMConfigError,
    LLMRequestError,
    MalformedResponseError,
    RetriesExhaustedError,
    TruncatedOutputError,
)
from efficientrag.llm.response import LLMResponse, parse_response
from efficientrag.llm.retry import RETRYABLE, UNREACHABLE_RETRY_DELAY_S, parse_retry_after, unreachable_reason
from efficientrag.llm.usage import UsageTracker

log = logging.getLogger(__name__)

T = TypeVar("T")
SleepFn = Callable[[float], Awaitable[Any]]
Messages = Sequence[Mapping[str, Any]]

# Sampling parameters sent as floats, so 0 and 0.0 give the same cache key.
_FLOAT_PARAMS = ("temperature", "top_p", "frequency_penalty", "presence_penalty")


class AsyncLLMClient:
    """Calls one OpenAI-compatible endpoint with retries, bounded concurrency, an optional on-disk
    cache and usage accounting (see the module docstring). One client per event loop.

    Args:
        cfg: Endpoint, model, key variable, retry, sampling and cache settings.
        sleep: The coroutine that waits between retries (tests pass a fake one).
        usage: The tracker to count calls, tokens and cost in (None: a new one, with ``cfg.prices``).
        cache: A response cache to share (None: one under ``cfg.cache_dir`` if set, owned and
            closed by this client).

    Raises:
        LLMConfigError: ``cfg.model`` is empty.
    """

    def __init__(
        self,
        cfg: LLMConfig,
        *,
        sleep: SleepFn = asyncio.sleep,
        usage: UsageTracker | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        if not cfg.model:
            raise LLMConfigError("LLMConfig.model is empty: set the model name (e.g. llm.model=gpt-4o-mini)")
        self.cfg = cfg
        self.base_url = cfg.resolved_base_url()
        self._api_key = cfg.resolved_api_key()
        self._openai = openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self.base_url, timeout=cfg.timeout, max_retries=0
        )
        self._sleep = sleep
        self._semaphore = asyncio.Semaphore(cfg.concurrency)
        self._rng = random.Random()
        self.usage = usage if usage is not None else UsageTracker(cfg.prices)
        # A cache passed in belongs to the caller (and may be shared); one built here is closed here.
        self._owns_cache = cache is None and bool(cfg.cache_dir)
        if self._owns_cache:
            cache = ResponseCache(cfg.cache_dir)
        self.cache = cache

    def __repr__(self) -> str:
        return f"AsyncLLMClient(model={self.cfg.model!r}, base_url={self.base_url!r})"

    # -- public API -------------------------------------------------------------------------------

    async def chat(
        self,
        messages: Messages,
        *,
        stage: str = "default",
        logprobs: bool = False,
        top_logprobs: int | None = None,
        stop: str | Sequence[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        allow_truncated: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """One chat completion. ``params`` are further OpenAI chat parameters (``top_p``,
        ``presence_penalty``, ``response_format`` ...); server-specific fields go in ``extra_body``.

        Args:
            messages: ``{"role", "content"}`` dicts.
            stage: The usage-accounting label the call is counted under (e.g. ``"decompose"``).
            logprobs: Ask for per-token log-probabilities of the reply.
            top_logprobs: Alternatives per token to return with them (implies ``logprobs``).
            stop: Stop sequence(s).
            max_tokens: Tokens to generate at most (None: ``cfg.max_tokens``).
            temperature: Sampling temperature (None: ``cfg.temperature``).
            allow_truncated: Return a reply cut at ``max_tokens`` instead of raising.
            extra_body: Server-specific body fields, merged over ``cfg.extra_body``.
            **params: Further OpenAI parameters (``top_p``, ``response_format`` ...).

        Returns:
            The reply with its usage (from the cache when the same request was made before).

        Raises:
            LLMConfigError: A bad argument (unknown parameter, ``n != 1``, malformed messages).
            TruncatedOutputError: The reply hit ``max_tokens`` and ``allow_truncated`` is False.
            LLMAuthError: The key was rejected (401).
            LLMRequestError: Another non-retryable HTTP error (4xx).
            RetriesExhaustedError: Every retry of a transient failure failed.
            EndpointUnreachableError: The endpoint cannot be reached at all.
        """
        request: dict[str, Any] = {"model": self.cfg.model, "messages": _check_messages(messages)}
        if logprobs or top_logprobs is not None:
            request["logprobs"] = True
            if top_logprobs is not None:
                request["top_logprobs"] = int(top_logprobs)
        request.update(self._sampling("chat", stop, max_tokens, temperature, params))
        return await self._call("chat", request, extra_body, stage=stage, allow_truncated=allow_truncated)

    async def complete(
        self,
        prompt: str,
        *,
        stage: str = "default",
        logprobs: int | None = None,
        stop: str | Sequence[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        allow_truncated: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """One text completion (``/completions``). ``logprobs=k`` asks for per-token log-probabilities
        with the top ``k`` alternatives (0: only the chosen tokens).

        Args:
            prompt: The prompt text.
            stage: The usage-accounting label the call is counted under (e.g. ``"decompose"``).
            logprobs: Alternatives per token to return with the log-probabilities (None: none).
            stop: Stop sequence(s).
            max_tokens: Tokens to generate at most (None: ``cfg.max_tokens``).
            temperature: Sampling temperature (None: ``cfg.temperature``).
            allow_truncated: Return a reply cut at ``max_tokens`` instead of raising.
            extra_body: Server-specific body fields, merged over ``cfg.extra_body``.
            **params: Further OpenAI parameters (``top_p``, ``response_format`` ...).

        Returns:
            The reply with its usage (from the cache when the same request was made before).

        Raises:
            LLMConfigError: A bad argument (unknown parameter, ``n != 1``, malformed messages).
            TruncatedOutputError: The reply hit ``max_tokens`` and ``allow_truncated`` is False.
            LLMAuthError: The key was rejected (401).
            LLMRequestError: Another non-retryable HTTP error (4xx).
            RetriesExhaustedError: Every retry of a transient failure failed.
            EndpointUnreachableError: The endpoint cannot be reached at all.
        """
        if not isinstance(prompt, str):
            raise LLMConfigError(f"prompt must be a string, got {type(prompt).__name__}")
        request: dict[str, Any] = {"model": self.cfg.model, "prompt": prompt}
        if logprobs is not None:
            request["logprobs"] = int(logprobs)
        request.update(self._sampling("completions", stop, max_tokens, temperature, params))
        return await self._call(
            "completions", request, extra_body, stage=stage, allow_truncated=allow_truncated
        )

    async def aclose(self) -> None:
        """Close the HTTP client, and the cache if this client opened it."""
        await self._openai.close()
        if self.cache is not None and self._owns_cache:
            self.cache.close()

    async def __aenter__(self) -> AsyncLLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- request building -------------------------------------------------------------------------

    def _sampling(
        self,
        kind: str,
        stop: str | Sequence[str] | None,
        max_tokens: int | None,
        temperature: float | None,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        if params.get("n", 1) != 1 or params.get("stream"):
            raise LLMConfigError("n != 1 and stream=True are not supported by this client")
        unknown = sorted(set(params) - _known_params(kind))
        if unknown:
            raise LLMConfigError(
                f"unknown {kind} parameter(s) {unknown}; server-specific fields go in extra_body"
            )
        out: dict[str, Any] = {
            "temperature": self.cfg.temperature if temperature is None else temperature,
            "max_tokens": self.cfg.max_tokens if max_tokens is None else max_tokens,
            "seed": self.cfg.seed,
            "stop": [stop] if isinstance(stop, str) else (list(stop) if stop else None),
        }
        out.update(params)
        for name in _FLOAT_PARAMS:
            if out.get(name) is not None:
                out[name] = float(out[name])
        return {k: v for k, v in out.items() if v is not None}

    # -- the call: cache, retries, accounting -----------------------------------------------------

    async def _call(
        self,
        kind: str,
        request: dict[str, Any],
        extra_body: Mapping[str, Any] | None,
        *,
        stage: str,
        allow_truncated: bool,
    ) -> LLMResponse:
        body_extra = {**self.cfg.extra_body, **(extra_body or {})}
        try:
            key = cache_key(kind, request, body_extra)
        except (TypeError, ValueError) as exc:
            raise LLMConfigError(f"request is not JSON-serializable: {exc}") from exc

        if self.cache is not None:
            response = await self._cache_get(key)
            if response is not None:
                if response.truncated and not allow_truncated:
                    self.usage.record_error(stage, "truncated")
                    self.usage.record_failure(stage)
                    raise TruncatedOutputError(_truncated_message(response), response=response)
                self.usage.record_response(stage, self.cfg.model, response.usage, cached=True)
                return response

        response = await self._request_with_retries(kind, request, body_extra, stage=stage)
        if response.truncated and not allow_truncated:
            self.usage.record_billed_failure(stage, self.cfg.model, response.usage, "truncated")
            raise TruncatedOutputError(_truncated_message(response), response=response)
        self.usage.record_response(stage, self.cfg.model, response.usage, cached=False)
        if self.cache is not None:
            await self._cache_put(key, kind, {**request, "extra_body": body_extra}, response)
        return response

    async def _cache_get(self, key: str) -> LLMResponse | None:
        assert self.cache is not None
        try:
            hit = await asyncio.to_thread(self.cache.get, key)
            return None if hit is None else LLMResponse.from_dict(hit, cached=True)
        except sqlite3.Error as exc:
            log.warning("LLM cache read failed (%s); asking the server instead", exc)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("LLM cache entry %s unusable (%r); asking the server instead", key[:12], exc)
        return None

    async def _cache_put(self, key: str, kind: str, request: dict[str, Any], response: LLMResponse) -> None:
        # A paid-for response is returned even if it cannot be stored: losing the cache entry
        # costs one repeated call later, losing the response would cost the caller's work now.
        assert self.cache is not None
        try:
            await asyncio.to_thread(
                self.cache.put,
                key,
                kind=kind,
                model=self.cfg.model,
                request=request,
                response=response.to_dict(),
            )
        except sqlite3.Error as exc:
            log.warning("LLM cache write failed (%s); the response is returned but not cached", exc)

    async def _request_with_retries(
        self, kind: str, request: dict[str, Any], extra_body: dict[str, Any], *, stage: str
    ) -> LLMResponse:
        attempts = self.cfg.max_retries + 1
        unreachable = 0
        for attempt in range(attempts):
            try:
                async with self._semaphore:
                    body = await self._post(kind, request, extra_body)
                return parse_response(kind, body)
            except (openai.APIError, MalformedResponseError) as exc:
                error_kind, retry_after = self._classify(exc)
                self.usage.record_error(stage, error_kind)
                if error_kind == "unreachable":
                    unreachable += 1
                    if unreachable > self.cfg.unreachable_retries:
                        self.usage.record_failure(stage)
                        raise EndpointUnreachableError(
                            f"cannot reach the LLM endpoint {self.base_url} ({unreachable_reason(exc)}): "
                            "start the server or fix the base_url setting",
                            base_url=self.base_url,
                        ) from None
                    self.usage.record_retry(stage)
                    await self._sleep(UNREACHABLE_RETRY_DELAY_S)
                    continue
                if error_kind not in RETRYABLE:
                    self.usage.record_failure(stage)
                    error = self._request_error(exc, error_kind)
                    # A 401's chained SDK error may quote part of the key; others are useful context.
                    raise error from (None if error_kind == "auth" else exc)
                if attempt + 1 >= attempts:
                    self.usage.record_failure(stage)
                    raise RetriesExhaustedError(
                        f"{kind} request to {self.base_url} (model {self.cfg.model!r}) failed "
                        f"{attempts} time(s); last error: {error_kind}: {self._describe(exc)}",
                        kind=error_kind,
                        attempts=attempts,
                    ) from exc
                delay = self._retry_delay(attempt, retry_after)
                self.usage.record_retry(stage)
                log.info(
                    "LLM %s %s (stage %s, attempt %d/%d); retrying in %.2fs",
                    kind,
                    error_kind,
                    stage,
                    attempt + 1,
                    attempts,
                    delay,
                )
                await self._sleep(delay)
        raise AssertionError("unreachable: the retry loop returns or raises")

    async def _post(self, kind: str, request: dict[str, Any], extra_body: dict[str, Any]) -> Any:
        # The SDK's generic post: its auth, headers, timeout and error classes, with the body built
        # here (already validated and canonical for the cache key). This skips the typed-params
        # transform of ``create()``, a quarter of the client's CPU per call at high concurrency.
        path = "/chat/completions" if kind == "chat" else "/completions"
        text = await self._openai.post(path, cast_to=str, body={**request, **extra_body})
        try:
            return json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise MalformedResponseError(f"body is not JSON ({len(text)} chars: {text[:80]!r})") from exc

    # -- error handling ---------------------------------------------------------------------------

    def _classify(self, exc: Exception) -> tuple[str, float | None]:
        """(error kind, server-requested delay in seconds or None)."""
        if isinstance(exc, MalformedResponseError | openai.APIResponseValidationError):
            return "malformed", None
        if isinstance(exc, openai.APITimeoutError):
            return "timeout", None
        if isinstance(exc, openai.APIConnectionError):
            return ("unreachable" if unreachable_reason(exc) else "connection"), None
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            retry_after = parse_retry_after(exc.response.headers)
            if status == 429:
                return "rate_limit", retry_after
            if status >= 500:
                return "server_error", retry_after
            if status == 408:
                return "timeout", retry_after
            if status == 401:
                return "auth", None
            if status == 403:
                return "permission", None
            if status == 404:
                return "not_found", None
            if status in (400, 422):
                return "bad_request", None
            return "client_error", None
        return "client_error", None

    def _request_error(self, exc: Exception, kind: str) -> LLMRequestError:
        status = getattr(exc, "status_code", None)
        if kind == "auth":
            # The server's text may echo part of the key; say only what to do.
            return LLMAuthError(
                f"HTTP 401 from {self.base_url}: the API key was rejected. Set a valid key in the "
                f"environment variable {self.cfg.api_key_env!r}.",
                kind=kind,
                status=status,
            )
        return LLMRequestError(
            f"HTTP {status} ({kind}) from {self.base_url} for model {self.cfg.model!r}: "
            f"{self._describe(exc)}",
            kind=kind,
            status=status,
        )

    def _describe(self, exc: Exception) -> str:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return self._redact(str(message))[:500]

    def _redact(self, text: str) -> str:
        key = self._api_key
        return text.replace(key, "<redacted>") if key and len(key) >= 8 else text

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cfg.max_retry_after)
        ceiling = min(self.cfg.backoff_max, self.cfg.backoff_base * 2.0**attempt)
        # "Equal jitter": at least half the exponential step, so retries keep backing off.
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)


@functools.cache
def _known_params(kind: str) -> frozenset[str]:
    """Parameter names the SDK's ``create()`` accepts for this endpoint (so typos fail early)."""
    from openai.resources.chat.completions import AsyncCompletions as Chat
    from openai.resources.completions import AsyncCompletions as Text

    create = Chat.create if kind == "chat" else Text.create
    skip = {"self", "model", "messages", "prompt", "extra_headers", "extra_query", "extra_body", "timeout"}
    return frozenset(set(inspect.signature(create).parameters) - skip)


def _check_messages(messages: Messages) -> list[dict[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise LLMConfigError("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or "role" not in msg or "content" not in msg:
            raise LLMConfigError(f"messages[{i}] must be a dict with 'role' and 'content', got {msg!r:.80}")
        out.append(dict(msg))
    return out


def _truncated_message(response: LLMResponse) -> str:
    return (
        f"reply stopped at the token limit after {response.usage.completion_tokens} tokens "
        "(raise max_tokens, or pass allow_truncated=True if a cut reply is wanted)"
    )


# -- blocking facade ------------------------------------------------------------------------------


class LLMClient(Closing):
    """Blocking wrapper for scripts and notebooks: runs an :class:`AsyncLLMClient` on a private
    event loop in a daemon thread, so it works from any thread, even one with its own loop.

    Args:
        cfg: As for :class:`AsyncLLMClient`.
        usage: As for :class:`AsyncLLMClient`.
        cache: As for :class:`AsyncLLMClient`.

    Raises:
        LLMConfigError: ``cfg.model`` is empty.
    """

    def __init__(
        self, cfg: LLMConfig, *, usage: UsageTracker | None = None, cache: ResponseCache | None = None
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="llm-client-loop", daemon=True)
        self._thread.start()

        async def build() -> AsyncLLMClient:
            return AsyncLLMClient(cfg, usage=usage, cache=cache)

        try:
            self.aclient = self._run(build())
        except BaseException:
            self._stop_loop()
            raise
        self._closed = False

    def __repr__(self) -> str:
        return f"LLMClient(model={self.aclient.cfg.model!r}, base_url={self.aclient.base_url!r})"

    @property
    def usage(self) -> UsageTracker:
        """The tracker counting this client's calls, tokens and cost."""
        return self.aclient.usage

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def chat(self, messages: Messages, **kwargs: Any) -> LLMResponse:
        """One chat completion, blocking (see :meth:`AsyncLLMClient.chat`).

        Args:
            messages: ``{"role", "content"}`` dicts.
            **kwargs: :meth:`AsyncLLMClient.chat`'s keyword arguments.

        Returns:
            The reply.
        """
        return self._run(self.aclient.chat(messages, **kwargs))

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        """One text completion, blocking (see :meth:`AsyncLLMClient.complete`).

        Args:
            prompt: The prompt text.
            **kwargs: :meth:`AsyncLLMClient.complete`'s keyword arguments.

        Returns:
            The reply.
        """
        return self._run(self.aclient.complete(prompt, **kwargs))

    def chat_many(
        self, batch: Sequence[Messages], *, return_exceptions: bool = False, **kwargs: Any
    ) -> list[LLMResponse | BaseException]:
        """Many chats at once (bounded by ``concurrency``), results in input order.

        Args:
            batch: One message list per chat.
            return_exceptions: Put a failed call's exception in its place instead of raising the
                first one.
            **kwargs: :meth:`AsyncLLMClient.chat`'s keyword arguments, for every chat.

        Returns:
            One reply (or exception) per chat.
        """
        return self._gather((self.aclient.chat(m, **kwargs) for m in batch), return_exceptions)

    def complete_many(
        self, prompts: Sequence[str], *, return_exceptions: bool = False, **kwargs: Any
    ) -> list[LLMResponse | BaseException]:
        """Many text completions at once (bounded by ``concurrency``), results in input order.

        Args:
            prompts: The prompts.
            return_exceptions: Put a failed call's exception in its place instead of raising the
                first one.
            **kwargs: :meth:`AsyncLLMClient.complete`'s keyword arguments, for every prompt.

        Returns:
            One reply (or exception) per prompt.
        """
        return self._gather((self.aclient.complete(p, **kwargs) for p in prompts), return_exceptions)

    def _gather(self, calls: Iterator[Awaitable[Any]], return_exceptions: bool) -> list[Any]:
        """``calls`` is a generator, so its coroutines are made inside the loop's thread, never
        left un-awaited when the loop cannot take them."""

        async def run_all() -> list[Any]:
            return await asyncio.gather(*calls, return_exceptions=return_exceptions)

        return self._run(run_all())

    def close(self) -> None:
        """Close the client and stop its loop thread (a second call does nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self.aclient.aclose())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
