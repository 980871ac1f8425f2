"""The retriever interface every method uses, so methods can be compared on the same retriever."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from efficientrag.data.schema import Chunk


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float

    @property
    def id(self) -> str:
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

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...
