"""What the RAG-framework adapters (LangChain, LlamaIndex, Haystack, DSPy) share: the metadata of
each kept chunk, how a batch is grouped, how the loop is loaded from trained folders, and the error
for a missing extra.

Kept framework-free so that every adapter describes a chunk with the same metadata and fails the
same way without its framework, and so that none needs another's package to be installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from efficientrag.data.schema import Chunk
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.pipeline.trace import Hop, trace_to_dicts
from efficientrag.retrieval.base import Retriever


@runtime_checkable
class RetrievalLoop(Protocol):
    """What the adapters need of the loop: a local ``EfficientRAG`` or a served one
    (``efficientrag.serve.client.RemoteEfficientRAG``, which also has ``aretrieve`` and
    ``aretrieve_batch``; the adapters' async paths use them when present)."""

    def retrieve(self, question: str) -> RetrievalResult: ...

    def retrieve_batch(self, questions: Sequence[str]) -> list[RetrievalResult]: ...


TRACE_KEY = "trace"
"""Metadata key of the per-hop trace (added only when an adapter is asked to include it)."""

METADATA_KEYS = ("id", "title", "continue_prob", "hop", "query", TRACE_KEY)
"""Every metadata key an adapter may set."""


def kept_chunks(
    result: RetrievalResult, *, include_trace: bool = False
) -> list[tuple[Chunk, dict[str, Any]]]:
    """``(chunk, metadata)`` in pool order, so results computed outside a framework (an eval run)
    read the same as ones retrieved through it.

    Metadata: ``id``, ``title``, ``continue_prob`` (the Labeler's Continue probability, the loop's
    only relevance score), ``hop`` (0-based; 0 is the question's own retrieval) and ``query`` (the
    query that retrieved the chunk when it was kept). A chunk is often retrieved, and rejected,
    earlier than it is kept, so the hop comes from the Labeler's Continue tag, not from the first
    retrieval. Both are None only for a result whose trace has no Continue tag for the chunk (one
    not made by the EfficientRAG loop). ``include_trace`` adds the whole per-hop trace under
    ``TRACE_KEY`` (the same list object for every chunk of the question, as JSON-ready dicts, like
    predictions.jsonl) for callers that want to show or log the reasoning.
    """
    entered = _entry_points(result.trace)
    trace = trace_to_dicts(result.trace) if include_trace else None
    out = []
    for chunk, score in zip(result.chunks, result.scores, strict=True):
        hop, query = entered.get(chunk.id, (None, None))
        metadata: dict[str, Any] = {
            "id": chunk.id,
            "title": chunk.title,
            "continue_prob": score,
            "hop": hop,
            "query": query,
        }
        if include_trace:
            metadata[TRACE_KEY] = trace
        out.append((chunk, metadata))
    return out


def _entry_points(trace: Sequence[Hop]) -> dict[str, tuple[int, str]]:
    """First (hop, query) at which each chunk was tagged Continue, i.e. entered the pool.

    Rows marked ``seen`` carry no tag (the chunk was already pooled or already judged for that
    query), and the pool only grows, so the first Continue is the entry. A chunk tagged Continue
    after the chunk budget filled never entered the pool, but then it is not in ``result.chunks``
    either, so the extra entry is never read.
    """
    entered: dict[str, tuple[int, str]] = {}
    for step in trace:
        for query, rows in zip(step.queries, step.hits, strict=True):
            for row in rows:
                if row.continued and row.id not in entered:
                    entered[row.id] = (step.hop, query)
    return entered


def groups(n: int, size: int | None) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of at most ``size`` questions (all ``n`` at once when ``size`` is unset or
    not positive): each range is one batched loop, which bounds the memory of a large batch."""
    step = n if not size or size <= 0 else size
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def load_rag(
    retriever: Retriever, labeler_dir: str | Path, filter_dir: str | Path, **config_overrides: Any
) -> EfficientRAG:
    """The loop over ``retriever`` with the Labeler and Filter from the folders ``efficientrag train
    labeler|filter`` wrote (their ``best/``); what every adapter's ``from_pretrained`` does.

    Args:
        retriever: the search backend (the package's index, or a framework's retriever wrapped as one).
        labeler_dir: the trained Labeler folder.
        filter_dir: the trained Filter folder.
        config_overrides: ``EfficientRAGConfig`` fields (``top_k``, ``max_hops``, ``device``, ...), so
            callers do not have to assemble a config to change one setting.
    """
    config = EfficientRAGConfig(labeler=str(labeler_dir), filter=str(filter_dir), **config_overrides)
    return EfficientRAG.from_config(retriever, config)


A = TypeVar("A", bound="FromPretrained")


class FromPretrained:
    """``from_pretrained`` for an adapter class whose constructor takes the loop as ``rag=`` and its
    own options (named in ``adapter_options``) as keywords: the LangChain, LlamaIndex and DSPy
    retrievers build themselves from trained folders the same way."""

    adapter_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_pretrained(
        cls: type[A], retriever: Retriever, labeler_dir: str | Path, filter_dir: str | Path, **kwargs: Any
    ) -> A:
        """Build from the folders ``efficientrag train labeler|filter`` wrote (their ``best/``).

        Args:
            retriever: the search backend the loop steers.
            labeler_dir: the trained Labeler folder.
            filter_dir: the trained Filter folder.
            kwargs: the adapter's own options (its ``adapter_options``: ``include_trace``, ``k``,
                ...), as for its constructor; every other keyword is an ``EfficientRAGConfig`` field
                (``top_k``, ``max_hops``, ``device``, ...), so callers do not have to assemble a
                config to change one setting.

        Returns:
            The adapter over a new loop.
        """
        options = {name: kwargs.pop(name) for name in cls.adapter_options if name in kwargs}
        return cls(rag=load_rag(retriever, labeler_dir, filter_dir, **kwargs), **options)


def missing_extra(module: str, requirement: str, extra: str, exc: ImportError) -> ImportError:
    """The one-line error an adapter module raises when its framework is not installed: what is
    missing, why (the original message) and the pip command that fixes it.

    Args:
        module: the adapter module (``efficientrag.pipeline.haystack``).
        requirement: the framework's pip requirement (``haystack-ai>=3.1``).
        extra: the efficientrag extra that installs it.
        exc: the ImportError the framework's import raised (kept as ``__cause__`` by the caller).
    """
    return ImportError(
        f"{module} needs {requirement} ({exc}); install it with: pip install 'efficientrag[{extra}]'"
    )
