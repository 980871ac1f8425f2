"""efficientrag: multi-hop retrieval without per-hop LLM calls.

The names a user of the retriever needs are importable from here (loaded on first use, so
``import efficientrag`` stays cheap and does not import torch)::

    from efficientrag import Corpus, EfficientRAG, EfficientRAGConfig, RetrieverConfig, build_retriever
"""

from __future__ import annotations

from efficientrag.lazy import by_module, lazy_exports
from efficientrag.models import autoregister as _autoregister

__version__ = "0.1.0"

_EXPORTS = by_module(
    __name__,
    {
        "data.schema": ("Chunk", "Example"),
        "data.corpus": ("Corpus",),
        "retrieval.config": ("RetrieverConfig",),
        "retrieval.factory": ("build_retriever", "load_retriever"),
        "pipeline.efficientrag": ("EfficientRAG", "RetrievalResult"),
        "pipeline.trace": ("Hop", "HitRecord"),
        "pipeline.config": ("EfficientRAGConfig",),
        "models.wrappers": ("Labeler", "Filter"),
        "config": ("load_config",),
        "errors": ("EfficientRAGError",),
    },
)

__all__ = ["__version__", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

# Saved Labeler/Filter folders load with transformers' AutoConfig/AutoModel once efficientrag is
# imported; registration waits until transformers itself is imported (no torch import here).
_autoregister.install()
