"""The Milvus backend: Milvus Lite (a local file, in-process) or a Milvus server, the same code.

* ``retriever``: :class:`MilvusRetriever`, dense, BM25 or hybrid search over one collection;
* ``config``: :class:`MilvusConfig`, the ``retriever.milvus`` section (no pymilvus import);
* ``client``: connecting (a Lite file or a server uri) and the errors that say what to install;
* ``index``: the collection's schema, filling it, and checking it matches the settings;
* ``version``: the server's version and what it supports (built-in BM25).

Names load on first use, so reading a retriever config does not import pymilvus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from efficientrag.retrieval.milvus.config import MilvusConfig
    from efficientrag.retrieval.milvus.retriever import MilvusRetriever, staging_file

_EXPORTS = by_module(
    __name__,
    {
        "config": ("MilvusConfig",),
        "retriever": ("MilvusRetriever", "staging_file"),
    },
)

__all__ = ["MilvusConfig", "MilvusRetriever", "staging_file"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
