"""A Haystack retriever (or an in-memory document store) as the loop's search backend.

Haystack has no retriever base class: a retriever is a component whose ``run`` takes a ``query``
(keyword retrievers such as ``InMemoryBM25Retriever``, Elasticsearch's, OpenSearch's) or a
``query_embedding`` (``InMemoryEmbeddingRetriever``, Qdrant's, pgvector's ...), with ``top_k`` per
call, and returns ``{"documents": [...]}``. An embedding retriever is paired with the text embedder
that embedded the store's documents (``text_embedder=``), so the user's query pipeline is rebuilt
exactly. An ``InMemoryDocumentStore`` passed as it is gets the in-memory retriever that fits: BM25,
or embedding when a text embedder is given.

The mapping is the LangChain backend's (see ``efficientrag.retrieval.framework``): chunk id from the
metadata key ``id_key`` (``id_key=None``: Haystack's ``Document.id``), a document without it stops
the search with a one-line error naming the key and the keys it has; title from ``title_key``; text
from ``content`` with a leading ``"{title}: "`` removed; score from ``Document.score`` (``1 / rank``
when the retriever sets none). Each query is one ``run`` (Haystack components have no batch call);
``asearch`` runs ``run_async`` where the component has it, else ``run`` in worker threads.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from efficientrag.errors import InvalidArgumentError, WrongTypeError
from efficientrag.retrieval.framework import _FrameworkSearch


class HaystackSearch(_FrameworkSearch):
    """A Haystack retriever component as a search backend (see the module docstring).

    Args:
        retriever: a Haystack retriever component, or an ``InMemoryDocumentStore``.
        text_embedder: the text embedder component for a retriever that takes ``query_embedding``
            (the one whose model embedded the store's documents); refused for a text retriever.
        max_concurrency: at most this many queries in flight in ``asearch``.
        id_key: the metadata key holding the chunk id (None: Haystack's ``Document.id``).
        title_key: the metadata key holding the title.

    Raises:
        ValueError: an embedding retriever without ``text_embedder``, or a text retriever with one.
        TypeError: ``retriever`` is not a retriever component, or the embedder is not a text embedder.
        ImportError: Haystack is not installed.
    """

    framework = "Haystack"
    needs = (
        "haystack-ai",
        "haystack",
        "a Haystack retriever component or an InMemoryDocumentStore",
        "for another document store pass its retriever component (e.g. QdrantEmbeddingRetriever(store))",
    )

    def __init__(
        self,
        retriever: Any,
        *,
        text_embedder: Any = None,
        max_concurrency: int = 8,
        id_key: str | None = "id",
        title_key: str = "title",
    ) -> None:
        super().__init__(_retriever_for(retriever, text_embedder), id_key=id_key, title_key=title_key)
        self.text_embedder = text_embedder
        self.max_concurrency = max_concurrency
        self._by_embedding = _check_inputs(self.retriever, text_embedder)
        self._warm = False

    @staticmethod
    def _base_retriever_class() -> type:
        from haystack.core.component import Component

        return Component

    def _warm_up(self) -> None:
        """What ``Pipeline.run`` does first: an embedder loads its model here, not at construction."""
        if not self._warm:
            for part in (self.text_embedder, self.retriever):
                if part is not None and hasattr(part, "warm_up"):
                    part.warm_up()
            self._warm = True

    def _retrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        self._warm_up()
        out = []
        for query in queries:
            if self._by_embedding:
                embedding = self.text_embedder.run(text=query)["embedding"]
                found = self.retriever.run(query_embedding=embedding, top_k=k)
            else:
                found = self.retriever.run(query=query, top_k=k)
            out.append(found["documents"])
        return out

    async def _aretrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        self._warm_up()
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(query: str) -> list[Any]:
            async with gate:
                if self._by_embedding:
                    embedding = (await _call(self.text_embedder, text=query))["embedding"]
                    found = await _call(self.retriever, query_embedding=embedding, top_k=k)
                else:
                    found = await _call(self.retriever, query=query, top_k=k)
                return found["documents"]

        return list(await asyncio.gather(*(one(q) for q in queries)))

    def _fields(self, doc: Any) -> tuple[Any, Any, str, Any]:
        meta = doc.meta or {}
        chunk_id = (doc.id or None) if self.id_key is None else meta.get(self.id_key)
        return chunk_id, meta.get(self.title_key), doc.content or "", doc.score

    def _metadata(self, doc: Any) -> dict[str, Any]:
        return doc.meta or {}


async def _call(part: Any, **inputs: Any) -> dict[str, Any]:
    """``run_async`` where the component has one; else ``run`` off the event loop."""
    if hasattr(part, "run_async"):
        return await part.run_async(**inputs)
    return await asyncio.to_thread(part.run, **inputs)


def _retriever_for(obj: Any, text_embedder: Any) -> Any:
    """An ``InMemoryDocumentStore`` becomes its in-memory retriever; anything else is kept (and
    without Haystack installed, left for the base class to report the missing extra)."""
    try:
        from haystack.document_stores.in_memory import InMemoryDocumentStore
    except ImportError:
        return obj

    if not isinstance(obj, InMemoryDocumentStore):
        return obj
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever

    return InMemoryBM25Retriever(obj) if text_embedder is None else InMemoryEmbeddingRetriever(obj)


def _check_inputs(retriever: Any, text_embedder: Any) -> bool:
    """True when the retriever searches by embedding; a retriever that takes neither input, or an
    embedder that the retriever cannot use (or lacks), is refused here rather than at the first
    search."""
    name = type(retriever).__name__
    params = inspect.signature(retriever.run).parameters
    if "query_embedding" in params:
        if text_embedder is None:
            raise InvalidArgumentError(
                f"HaystackSearch: {name} searches by query_embedding; pass text_embedder= (the text embedder "
                "whose model embedded the store's documents, e.g. SentenceTransformersTextEmbedder)"
            )
        if "text" not in inspect.signature(text_embedder.run).parameters:
            raise WrongTypeError(
                f"HaystackSearch: text_embedder {type(text_embedder).__name__} has no run(text=...); "
                "pass a text embedder, not a document embedder"
            )
        return True
    if "query" not in params:
        raise WrongTypeError(
            f"HaystackSearch: {name}.run takes neither query nor query_embedding; is it a retriever?"
        )
    if text_embedder is not None:
        raise InvalidArgumentError(
            f"HaystackSearch: {name} searches by text (run(query=...)); it takes no text_embedder"
        )
    return False
