"""Retrieval backends behind one batched interface: ``search(queries, k) -> list[list[Hit]]``.

Backends load lazily, so ``from efficientrag.retrieval import Hit`` does not import FAISS, bm25s
or torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports
from efficientrag.retrieval.base import Hit, Retriever

if TYPE_CHECKING:
    from efficientrag.retrieval.bm25 import BM25Retriever
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.dense import DenseRetriever
    from efficientrag.retrieval.dspy_search import DSPySearch
    from efficientrag.retrieval.embedding_store import EmbeddingStore
    from efficientrag.retrieval.encoder import Encoder
    from efficientrag.retrieval.errors import BackendUnavailableError, IndexMismatchError, IndexNotFoundError
    from efficientrag.retrieval.factory import build_retriever, load_retriever
    from efficientrag.retrieval.framework import LangChainSearch, LlamaIndexSearch
    from efficientrag.retrieval.haystack_search import HaystackSearch
    from efficientrag.retrieval.milvus.config import MilvusConfig
    from efficientrag.retrieval.milvus.retriever import MilvusRetriever

_LAZY = by_module(
    __name__,
    {
        "config": ("RetrieverConfig",),
        "encoder": ("Encoder",),
        "embedding_store": ("EmbeddingStore",),
        "dense": ("DenseRetriever",),
        "bm25": ("BM25Retriever",),
        "factory": ("build_retriever", "load_retriever"),
        "errors": ("IndexMismatchError", "IndexNotFoundError", "BackendUnavailableError"),
        "milvus.config": ("MilvusConfig",),
        "milvus.retriever": ("MilvusRetriever",),
        "framework": ("LangChainSearch", "LlamaIndexSearch"),
        "haystack_search": ("HaystackSearch",),
        "dspy_search": ("DSPySearch",),
    },
)

__all__ = [
    "BM25Retriever",
    "BackendUnavailableError",
    "DSPySearch",
    "DenseRetriever",
    "EmbeddingStore",
    "Encoder",
    "HaystackSearch",
    "Hit",
    "IndexMismatchError",
    "IndexNotFoundError",
    "LangChainSearch",
    "LlamaIndexSearch",
    "MilvusConfig",
    "MilvusRetriever",
    "Retriever",
    "RetrieverConfig",
    "build_retriever",
    "load_retriever",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
