"""Retrieval backends behind one batched interface: ``search(queries, k) -> list[list[Hit]]``.

Backends load lazily, so ``from efficientrag.retrieval import Hit`` does not import FAISS, bm25s
or torch. The Milvus modules that were flat here (``milvus_client``, ``milvus_config``,
``milvus_index``, ``milvus_version``) live in the ``milvus`` subpackage; importing an old path
fails with one line naming the new one (:func:`efficientrag.lazy.moved_modules`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports, moved_modules
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

# The flat Milvus modules became the milvus/ subpackage (milvus.py itself became milvus/retriever.py,
# its names still exported by efficientrag.retrieval.milvus). Spelled out so a search finds them.
moved_modules(
    {
        "efficientrag.retrieval.milvus_client": "efficientrag.retrieval.milvus.client",
        "efficientrag.retrieval.milvus_config": "efficientrag.retrieval.milvus.config",
        "efficientrag.retrieval.milvus_index": "efficientrag.retrieval.milvus.index",
        "efficientrag.retrieval.milvus_version": "efficientrag.retrieval.milvus.version",
    }
)
