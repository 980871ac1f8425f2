"""The search backend as the service sees it: a failure that names it, and a readiness probe.

The loop calls ``retriever.search`` deep inside ``retrieve_batch``; a Milvus server that went away
would surface as some gRPC or socket error that says nothing of where it came from. The guard
turns any exception from the backend into ``BackendFailure`` naming the backend, so the reply can
be 502/503 with that name instead of a 500 (and, being the loop's one call per hop, is where a
batch nobody waits for any more stops), and ``probe`` asks the backend the smallest question
so that ``/readyz`` reports whether it answers now (it turns green again by itself once it does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from efficientrag.errors import EfficientRAGError
from efficientrag.retrieval.base import Hit, Retriever
from efficientrag.retrieval.errors import BackendUnavailableError

PROBE_QUERY = "readiness probe"


class BackendFailure(EfficientRAGError, RuntimeError):
    """The search backend raised. ``unavailable``: it cannot be reached (503, try later);
    otherwise it answered wrongly (502)."""

    def __init__(self, backend: str, cause: BaseException) -> None:
        self.backend = backend
        self.cause = cause
        self.unavailable = isinstance(cause, (BackendUnavailableError, ConnectionError, TimeoutError))
        detail = str(cause).splitlines()[0][:300] if str(cause) else ""
        super().__init__(
            f"search backend {backend} failed: {type(cause).__name__}" + (f": {detail}" if detail else "")
        )

    @property
    def status(self) -> int:
        return 503 if self.unavailable else 502


class BatchStopped(EfficientRAGError):
    """The batch gave up at a hop boundary: every caller in it had left or run out of time."""


class GuardedRetriever:
    """``retriever`` with its failures named (see the module docstring); every other attribute
    (``last_timings``, ``encoder``, ``corpus`` ...) is the wrapped retriever's.

    ``stop``, when set, is asked before every search: the loop begins each hop with one, so this is
    where a batch whose callers have all gone stops, at the next hop boundary and before that hop's
    search, Labeler and Filter work (``BatchStopped``). The loop has no hook of its own for this;
    its search backend is the one call it makes at every hop boundary.
    """

    def __init__(self, retriever: Retriever, backend: str) -> None:
        self.inner = retriever
        self.backend = backend
        self.stop: Callable[[], bool] | None = None

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if self.stop is not None and self.stop():
            raise BatchStopped("every caller of this batch has left")
        try:
            return self.inner.search(queries, k)
        except Exception as exc:
            raise BackendFailure(self.backend, exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def backend_name(kind: str, retriever: Any) -> str:
    """How replies and logs name the backend: its kind, and for Milvus the uri (without
    credentials) and collection."""
    from efficientrag.retrieval.factory import backend_of

    describe = getattr(retriever, "describe", None)
    if backend_of(kind).holds_chunks and callable(describe):
        info = describe()
        return f"{kind} ({info.get('uri')}, collection {info.get('collection')})"
    return kind


def probe(retriever: Retriever) -> None:
    """One top-1 search; raises what the backend raises (``BackendFailure`` through the guard)."""
    retriever.search([PROBE_QUERY], 1)
