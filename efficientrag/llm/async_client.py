"""Async client for OpenAI-compatible chat and completions endpoints (OpenAI, vLLM, Ollama, ...).

Built on ``openai.AsyncOpenAI`` with the SDK's own retries switched off, so the retry policy is
this package's and shows in the usage counters: exponential backoff with jitter on 429 (honouring
``Retry-After`` / ``retry-after-ms``), 5xx, timeouts, dropped connections and unparseable bodies; no
retry on other 4xx (:mod:`efficientrag.llm.retry`, :mod:`efficientrag.llm.failure`). An endpoint
that cannot be reached at all (connection refused, unknown host) is not a transient failure: it
gets ``unreachable_retries`` short retries (for a server that is just starting), then
:class:`EndpointUnreachableError` names it, instead of minutes of backoff per request. Requests are
built and checked by :mod:`efficientrag.llm.request`. Concurrency is bounded by a semaphore; with
``cache_dir`` set, finished responses are kept on disk and a repeated request makes no HTTP call
at all.

One :class:`AsyncLLMClient` belongs to one event loop. Scripts that are not async use
:class:`~efficientrag.llm.client.LLMClient`, which runs its own loop in a background thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import openai

from efficientrag.llm.cache import ResponseCache, cache_key
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.errors import (
    EndpointUnreachableError,
    LLMConfigError,
    LLMRequestError,
    MalformedResponseError,
    RetriesExhaustedError,
    TruncatedOutputError,
)
from efficientrag.llm.failure import classify_error, describe_error, request_error, truncated_message
from efficientrag.llm.request import Messages, check_messages, sampling_params
from efficientrag.llm.response import LLMResponse
from efficientrag.llm.response_body import parse_response
from efficientrag.llm.retry import RETRYABLE, UNREACHABLE_RETRY_DELAY_S, retry_delay, unreachable_reason
from efficientrag.llm.usage import UsageTracker

# The logger keeps the name it had when this class lived in efficientrag.llm.client.
log = logging.getLogger("efficientrag.llm.client")

SleepFn = Callable[[float], Awaitable[Any]]


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
        request: dict[str, Any] = {"model": self.cfg.model, "messages": check_messages(messages)}
        if logprobs or top_logprobs is not None:
            request["logprobs"] = True
            if top_logprobs is not None:
                request["top_logprobs"] = int(top_logprobs)
        request.update(sampling_params(self.cfg, "chat", stop, max_tokens, temperature, params))
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
        with the top ``k`` alternatives (0: only the chosen tokens). Every other argument, the reply
        and the errors are those of :meth:`chat`.

        Args:
            prompt: The prompt text.
            stage: As for :meth:`chat`.
            logprobs: Alternatives per token to return with the log-probabilities (None: none).
            stop: As for :meth:`chat`.
            max_tokens: As for :meth:`chat`.
            temperature: As for :meth:`chat`.
            allow_truncated: As for :meth:`chat`.
            extra_body: As for :meth:`chat`.
            **params: As for :meth:`chat`.

        Returns:
            The reply with its usage, as :meth:`chat` returns it.

        Raises:
            LLMConfigError: ``prompt`` is not a string, or another bad argument as for :meth:`chat`.
            LLMError: The subclasses :meth:`chat` raises, for the same causes.
        """
        if not isinstance(prompt, str):
            raise LLMConfigError(f"prompt must be a string, got {type(prompt).__name__}")
        request: dict[str, Any] = {"model": self.cfg.model, "prompt": prompt}
        if logprobs is not None:
            request["logprobs"] = int(logprobs)
        request.update(sampling_params(self.cfg, "completions", stop, max_tokens, temperature, params))
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
                    raise TruncatedOutputError(truncated_message(response), response=response)
                self.usage.record_response(stage, self.cfg.model, response.usage, cached=True)
                return response

        response = await self._request_with_retries(kind, request, body_extra, stage=stage)
        if response.truncated and not allow_truncated:
            self.usage.record_billed_failure(stage, self.cfg.model, response.usage, "truncated")
            raise TruncatedOutputError(truncated_message(response), response=response)
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
                error_kind, retry_after = classify_error(exc)
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
                        f"{attempts} time(s); last error: {error_kind}: {describe_error(exc, self._api_key)}",
                        kind=error_kind,
                        attempts=attempts,
                    ) from exc
                delay = retry_delay(self.cfg, attempt, retry_after, self._rng)
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

    def _request_error(self, exc: Exception, kind: str) -> LLMRequestError:
        return request_error(
            exc,
            kind,
            base_url=self.base_url,
            model=self.cfg.model,
            api_key_env=self.cfg.api_key_env,
            api_key=self._api_key,
        )
