"""The LLM clients: :class:`LLMClient`, the blocking one for scripts and notebooks, defined here,
and :class:`AsyncLLMClient` (:mod:`efficientrag.llm.async_client`), which it runs and which holds
the retry policy, the cache and the usage accounting.

One :class:`AsyncLLMClient` belongs to one event loop; :class:`LLMClient` runs one on its own loop
in a background thread, so code that is not async can call an endpoint from any thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from efficientrag.closing import Closing
from efficientrag.llm.async_client import AsyncLLMClient
from efficientrag.llm.cache import ResponseCache
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.request import Messages
from efficientrag.llm.response import LLMResponse
from efficientrag.llm.usage import UsageTracker

T = TypeVar("T")


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
