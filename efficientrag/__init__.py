"""efficientrag: multi-hop retrieval without per-hop LLM calls.

The names a user of the retriever needs are importable from here (loaded on first use, so
``import efficientrag`` stays cheap and does not import torch)::

    from efficientrag import Corpus, EfficientRAG, EfficientRAGConfig, RetrieverConfig, build_retriever
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Chunk": "efficientrag.data.schema",
    "Example": "efficientrag.data.schema",
    "Corpus": "efficientrag.data.corpus",
    "RetrieverConfig": "efficientrag.retrieval.config",
    "build_retriever": "efficientrag.retrieval.factory",
    "load_retriever": "efficientrag.retrieval.factory",
    "EfficientRAG": "efficientrag.pipeline.efficientrag",
    "RetrievalResult": "efficientrag.pipeline.efficientrag",
    "EfficientRAGConfig": "efficientrag.pipeline.config",
    "Labeler": "efficientrag.models.labeler",
    "Filter": "efficientrag.models.filter",
    "load_config": "efficientrag.config",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'efficientrag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
