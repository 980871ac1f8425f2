"""The retriever interface every method uses, so methods can be compared on the same retriever."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from efficientrag.data.schema import Chunk


@dataclass(frozen=True)
class Hit:
    """One search result: the chunk itself (so callers need no corpus) and its score.

    Attributes:
        chunk: The retrieved chunk.
        score: The backend's score (inner product, BM25, fused RRF ...); higher is better, and
            scores are comparable only within one backend.
    """

    chunk: Chunk
    score: float

    @property
    def id(self) -> str:
        """The chunk's id."""
        return self.chunk.id


@runtime_checkable
class Retriever(Protocol):
    """Batched top-k search. Hits are sorted by descending score and carry their chunk, so callers
    need no in-process corpus: a Milvus collection or a LangChain/LlamaIndex retriever serves the
    loop as well as the local indexes (which also keep theirs as ``.corpus``).

    Backends also set ``last_timings`` (seconds of the latest ``search`` call, split into
    ``encode``: turning queries into vectors or terms, and ``search``: the index lookup) so that
    latency breakdowns can tell the two apart; callers read it with ``getattr(..., None)``.
    """

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top-k hits for every query, in one batched call.

        Args:
            queries: The queries.
            k: Hits per query at most.

        Returns:
            One list of hits per query, in query order, each sorted by descending score.

        Raises:
            TypeError: ``queries`` is one string, or holds a non-string (the local backends).
            ValueError: ``k`` is negative or not an integer.
        """
        ...
