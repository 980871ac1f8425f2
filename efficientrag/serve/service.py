"""The loaded loop behind the routes: one ``EfficientRAG`` per settings key, and readiness.

A request's settings make a loop of their own (``EfficientRAG`` is cheap: it shares the retriever,
Labeler and Filter), kept in a small cache so repeated settings reuse it and its chunk-word cache.
Only the batcher's worker thread touches the loops (and the guard's per-batch ``stop``), so
neither needs a lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.serve.backend import GuardedRetriever, probe
from efficientrag.serve.memory import release_freed_memory

_LOOPS_KEPT = 16


class Service:
    """``rag``'s retriever is wrapped so that its failures name ``backend``; with ``trim_memory``,
    what each batch freed goes back to the OS (``ServeConfig.trim_memory``)."""

    def __init__(self, rag: EfficientRAG, backend: str, *, trim_memory: bool = False) -> None:
        self.trim_memory = trim_memory
        self.guard = GuardedRetriever(rag.retriever, backend)
        self.base = EfficientRAG(self.guard, rag.labeler, rag.filter, rag.config)
        self.backend = backend
        self._loops: OrderedDict[Hashable, EfficientRAG] = OrderedDict({(): self.base})
        self.last_backend_error: str | None = None
        self._probe_lock = asyncio.Lock()

    def run(
        self, key: Hashable, questions: list[str], stop: Callable[[], bool] | None = None
    ) -> list[RetrievalResult]:
        """One batch (in the batcher's worker thread). ``key`` is the sorted ``(setting, value)``
        pairs the request checked (``requests.settings_config``), so it rebuilds its config.
        ``stop`` is asked at every hop boundary (``backend.GuardedRetriever``): True raises
        ``BatchStopped`` there."""
        loop = self._loops.get(key)
        if loop is None:
            config = dataclasses.replace(self.base.config, **dict(key))  # type: ignore[call-overload]
            loop = EfficientRAG(self.base.retriever, self.base.labeler, self.base.filter, config)
            self._loops[key] = loop
            while len(self._loops) > _LOOPS_KEPT:
                self._loops.popitem(last=False)
        self._loops.move_to_end(key)
        self.guard.stop = stop
        try:
            return loop.retrieve_batch(questions)
        finally:
            self.guard.stop = None
            if self.trim_memory:
                release_freed_memory()

    async def ready(self, timeout_s: float) -> dict[str, Any]:
        """Models are loaded (they are, once the service exists) and the backend answers now."""
        async with self._probe_lock:
            try:
                await asyncio.wait_for(asyncio.to_thread(probe, self.base.retriever), timeout_s)
            except asyncio.TimeoutError:
                self.last_backend_error = f"search backend {self.backend} did not answer within {timeout_s} s"
            except Exception as exc:
                self.last_backend_error = str(exc)
            else:
                self.last_backend_error = None
        return {
            "ready": self.last_backend_error is None,
            "models": "loaded",
            "backend": self.backend,
            **({"error": self.last_backend_error} if self.last_backend_error else {}),
        }
