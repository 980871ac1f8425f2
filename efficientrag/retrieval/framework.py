"""A LangChain or LlamaIndex retriever as the loop's search backend.

Any LangChain ``BaseRetriever`` (so every vector store through ``.as_retriever()``: Chroma,
pgvector, Elasticsearch, OpenSearch, Milvus ...) or LlamaIndex ``BaseRetriever`` becomes a
:class:`~efficientrag.retrieval.base.Retriever`: ``search(queries, k)`` returns hits carrying
their chunks, so EfficientRAG, the baselines and evaluation run on it with no corpus of their own.
(``efficientrag.pipeline.langchain`` / ``.llamaindex`` go the other way: EfficientRAG *as* a
framework retriever.)

Mapping, the same for both frameworks:
- chunk id: the metadata key ``id_key`` (default ``"id"``); a document without it stops the search
  with an error naming the key and the keys it has (``id_key=None`` takes LangChain's
  ``Document.id`` / LlamaIndex's ``node_id`` instead). Evaluation compares these ids to the
  dataset's gold ids, so they must be the corpus ids. An empty id, or one id on two documents of
  the same result list, stops the search too: the loop keys chunks by id, so it would judge the
  first and drop the rest as already seen.
- title: the metadata key ``title_key`` (missing: ""); text: the page content / node content, with
  a leading ``"{title}: "`` removed (what the package's own indexes store).
- score: LlamaIndex's node score; for LangChain, whose retrievers return none, the metadata key
  ``score_key`` when set and present, else ``1 / rank``.
- ``k``: LangChain vector-store retrievers get ``k`` per call (their ``search_kwargs``), retrievers
  with a ``k`` field a copy with it set; LlamaIndex retrievers with ``similarity_top_k`` get it set.
  Others return what they are configured for, cut at ``k``.
- batches: LangChain's ``batch`` / ``abatch`` (its thread pool, or the store's own batch where it
  overrides them); LlamaIndex has no batch call, so ``search`` retrieves query by query and
  ``asearch`` runs its ``aretrieve`` calls concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from efficientrag.errors import EfficientRAGError, MissingExtraError, WrongTypeError
from efficientrag.retrieval.base import Hit
from efficientrag.retrieval.chunk_text import chunk_from_stored
from efficientrag.retrieval.queries import check_search_args

log = logging.getLogger(__name__)


class MissingChunkIdError(EfficientRAGError, KeyError):
    """A framework document has no usable chunk id: none, an empty one, or one another document
    of the same result list has too (the loop would take them for one chunk and judge only the
    first)."""

    def __str__(self) -> str:  # KeyError quotes its message; this one is a sentence
        return str(self.args[0])


def _live(queries: Sequence[str], k: int) -> list[int]:
    """Positions of the queries the framework is asked: none when ``k`` is 0, else the non-blank ones."""
    return [i for i, q in enumerate(queries) if q.strip()] if k > 0 else []


class _FrameworkSearch(ABC):
    framework = ""
    # What the constructor accepts, for its errors: (pip package, extra, the base class it wants,
    # how to get one from a store/index).
    needs: tuple[str, str, str, str] = ("", "", "", "")

    def __init__(
        self,
        retriever: Any,
        *,
        id_key: str | None = "id",
        title_key: str = "title",
        score_key: str | None = None,
    ) -> None:
        name, (package, extra, wanted, hint) = type(self).__name__, self.needs
        try:
            base = self._base_retriever_class()
        except ImportError as exc:
            raise MissingExtraError(
                f"{name} needs {package} ({exc}): pip install 'efficientrag[{extra}]'"
            ) from exc
        if not isinstance(retriever, base):
            raise WrongTypeError(f"{name} takes {wanted}, got {type(retriever).__name__}; {hint}")
        self.retriever = retriever
        self.id_key = id_key
        self.title_key = title_key
        self.score_key = score_key
        self.last_timings: dict[str, float] = {}

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top-``k`` hits per query from the framework's retriever (mapped as the module says).

        Args:
            queries: The queries; empty ones get ``[]`` without a call.
            k: Hits per query at most.

        Returns:
            One list of hits per query, in the framework's order.

        Raises:
            MissingChunkIdError: A returned document has no chunk id under ``id_key``, an empty
                one, or the id of another document in the same result list.
        """
        queries, k = check_search_args(queries, k)
        live = _live(queries, k)
        t0 = time.perf_counter()
        found = self._retrieve([queries[i] for i in live], k) if live else []
        results = self._results(queries, live, found, k)
        # The framework embeds and searches in one call: the time is all "search".
        self.last_timings = {"encode": 0.0, "search": time.perf_counter() - t0}
        return results

    async def asearch(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """:meth:`search` through the framework's async calls: the same hits, the same errors.

        Args:
            queries: As for :meth:`search`.
            k: As for :meth:`search`.

        Returns:
            What :meth:`search` returns.
        """
        queries, k = check_search_args(queries, k)
        live = _live(queries, k)
        found = await self._aretrieve([queries[i] for i in live], k) if live else []
        return self._results(queries, live, found, k)

    def _results(
        self, queries: list[str], live: list[int], found: list[list[Any]], k: int
    ) -> list[list[Hit]]:
        """The hits per query: ``found`` mapped for the ``live`` positions, ``[]`` for the others."""
        results: list[list[Hit]] = [[] for _ in queries]
        for i, items in zip(live, found, strict=True):
            results[i] = self._hits(queries[i], items, k)
        return results

    def _hits(self, query: str, items: Sequence[Any], k: int) -> list[Hit]:
        """Every framework (the subclasses' ``_fields``) goes through here, so the chunk id is
        checked in one place: present, not blank, and not shared within the result list."""
        hits = []
        first_rank: dict[str, int] = {}
        for rank, item in enumerate(items[:k], start=1):
            chunk_id, title, text, score = self._fields(item)
            if chunk_id is None:
                raise MissingChunkIdError(self._missing_id_message(query, item))
            chunk_id = str(chunk_id)
            if not chunk_id.strip():
                raise MissingChunkIdError(self._bad_id_message(query, rank, f"has an empty id {chunk_id!r}"))
            if chunk_id in first_rank:
                shared = f"has the id {chunk_id!r} of result {first_rank[chunk_id]}"
                raise MissingChunkIdError(self._bad_id_message(query, rank, shared))
            first_rank[chunk_id] = rank
            score = float(score) if score is not None else 1.0 / rank
            hits.append(Hit(chunk_from_stored(chunk_id, str(title or ""), text), score))
        # Hits stay in the framework's order, whatever their scores.
        return hits

    def _bad_id_message(self, query: str, rank: int, what: str) -> str:
        """An id that is there but cannot name one chunk: the loop keys chunks by id, so every hit
        sharing it after the first would be taken as already seen and never judged."""
        source = "its id" if self.id_key is None else f"metadata {self.id_key!r}"
        return (
            f"{self.framework} result {rank} for query {query[:60]!r} {what} ({source}): every document "
            "needs its own chunk id; give each document its corpus id when you index it, or set id_key "
            "to the key that holds one"
        )

    def _missing_id_message(self, query: str, item: Any) -> str:
        where = f"{self.framework} result for query {query[:60]!r}"
        if self.id_key is None:
            return f"{where} has no id; set id_key to the metadata key that holds your chunk ids"
        keys = sorted(self._metadata(item))
        return (
            f"{where} has no metadata {self.id_key!r} (its keys: {keys}); set id_key to the key holding "
            "your chunk ids, or add them to the documents' metadata when you index them"
        )

    # --- per framework -----------------------------------------------------------------------------

    @staticmethod
    @abstractmethod
    def _base_retriever_class() -> type:
        """The framework's retriever base class (imported here: the framework is an optional extra)."""

    @abstractmethod
    def _retrieve(self, queries: list[str], k: int) -> list[list[Any]]: ...

    @abstractmethod
    async def _aretrieve(self, queries: list[str], k: int) -> list[list[Any]]: ...

    @abstractmethod
    def _fields(self, item: Any) -> tuple[Any, Any, str, Any]:
        """(chunk id, title, text, score or None) of one framework document or node."""

    @abstractmethod
    def _metadata(self, item: Any) -> dict[str, Any]: ...


class LangChainSearch(_FrameworkSearch):
    """A LangChain ``BaseRetriever`` as a search backend (see the module docstring).

    Args:
        retriever: A ``langchain_core`` ``BaseRetriever`` (for a vector store, ``store.as_retriever()``).
        max_concurrency: Queries in flight at most in a batch (None: LangChain's default).
        **kw: ``id_key`` (metadata key of the chunk id, default ``"id"``; None: ``Document.id``),
            ``title_key`` (default ``"title"``) and ``score_key`` (default None: ``1 / rank``).

    Raises:
        TypeError: ``retriever`` is not a LangChain retriever.
        ImportError: ``langchain-core`` is not installed.
    """

    framework = "LangChain"
    needs = (
        "langchain-core",
        "langchain",
        "a langchain_core BaseRetriever",
        "for a vector store pass store.as_retriever()",
    )

    def __init__(self, retriever: Any, *, max_concurrency: int | None = None, **kw: Any) -> None:
        super().__init__(retriever, **kw)
        self.max_concurrency = max_concurrency
        self._copies: dict[int, Any] = {}

    @staticmethod
    def _base_retriever_class() -> type:
        from langchain_core.retrievers import BaseRetriever

        return BaseRetriever

    def _target(self, k: int) -> tuple[Any, dict[str, Any]]:
        """The retriever to call and the per-call kwargs that make it return ``k`` documents."""
        from langchain_core.vectorstores import VectorStoreRetriever

        if isinstance(self.retriever, VectorStoreRetriever):
            return self.retriever, {"k": k}
        if "k" in type(self.retriever).model_fields:
            if k not in self._copies:
                self._copies[k] = self.retriever.model_copy(update={"k": k})
            return self._copies[k], {}
        return self.retriever, {}

    def _config(self) -> dict[str, Any]:
        return {"max_concurrency": self.max_concurrency} if self.max_concurrency else {}

    def _retrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        target, kwargs = self._target(k)
        return target.batch(queries, config=self._config(), **kwargs)

    async def _aretrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        target, kwargs = self._target(k)
        return await target.abatch(queries, config=self._config(), **kwargs)

    def _fields(self, doc: Any) -> tuple[Any, Any, str, Any]:
        meta = doc.metadata or {}
        chunk_id = getattr(doc, "id", None) if self.id_key is None else meta.get(self.id_key)
        score = meta.get(self.score_key) if self.score_key else None
        return chunk_id, meta.get(self.title_key), doc.page_content, score

    def _metadata(self, doc: Any) -> dict[str, Any]:
        return doc.metadata or {}


class LlamaIndexSearch(_FrameworkSearch):
    """A LlamaIndex ``BaseRetriever`` as a search backend (see the module docstring).

    Args:
        retriever: A ``llama_index`` ``BaseRetriever`` (for an index, ``index.as_retriever()``).
        max_concurrency: Queries in flight at most in ``asearch``.
        **kw: ``id_key`` (metadata key of the chunk id, default ``"id"``; None: ``node_id``) and
            ``title_key`` (default ``"title"``); scores are the nodes' own.

    Raises:
        TypeError: ``retriever`` is not a LlamaIndex retriever.
        ImportError: ``llama-index-core`` is not installed.
    """

    framework = "LlamaIndex"
    needs = (
        "llama-index-core",
        "llamaindex",
        "a llama_index BaseRetriever",
        "for an index pass index.as_retriever()",
    )

    def __init__(self, retriever: Any, *, max_concurrency: int = 8, **kw: Any) -> None:
        super().__init__(retriever, **kw)
        self.max_concurrency = max_concurrency
        self._warned_embedded = False

    @staticmethod
    def _base_retriever_class() -> type:
        from llama_index.core.base.base_retriever import BaseRetriever

        return BaseRetriever

    def _set_k(self, k: int) -> None:
        if hasattr(self.retriever, "similarity_top_k"):
            self.retriever.similarity_top_k = k

    def _retrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        self._set_k(k)
        return [self.retriever.retrieve(q) for q in queries]

    async def _aretrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        self._set_k(k)
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(query: str) -> list[Any]:
            async with gate:
                return await self.retriever.aretrieve(query)

        return list(await asyncio.gather(*(one(q) for q in queries)))

    def _fields(self, scored: Any) -> tuple[Any, Any, str, Any]:
        node = scored.node
        meta = node.metadata or {}
        if not self._warned_embedded:
            self._warn_embedded_keys(node, meta)
        chunk_id = node.node_id if self.id_key is None else meta.get(self.id_key)
        return chunk_id, meta.get(self.title_key), node.get_content(), scored.score

    def _metadata(self, scored: Any) -> dict[str, Any]:
        return scored.node.metadata or {}

    def _warn_embedded_keys(self, node: Any, meta: dict[str, Any]) -> None:
        """LlamaIndex embeds a node's metadata with its text unless the keys are excluded, so an
        index of nodes carrying the id and title metadata this class reads finds other neighbours
        than an index of the text alone (the package's own): say so, once."""
        excluded = set(getattr(node, "excluded_embed_metadata_keys", None) or ())
        embedded = [k for k in (self.id_key, self.title_key) if k and k in meta and k not in excluded]
        if embedded:
            self._warned_embedded = True
            log.warning(
                "LlamaIndex embeds node metadata with the text unless its keys are excluded, and these "
                "nodes do not exclude %s: the index then finds other neighbours than an index of the "
                "text alone; set excluded_embed_metadata_keys=%s on the documents or nodes before "
                "indexing them (docs/llamaindex.md)",
                ", ".join(repr(k) for k in embedded),
                sorted(set(embedded) | excluded),
            )
