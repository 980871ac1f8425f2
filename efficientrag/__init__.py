"""efficientrag: multi-hop retrieval without per-hop LLM calls.

The names a user of the retriever needs are importable from here (loaded on first use, so
``import efficientrag`` stays cheap and does not import torch)::

    from efficientrag import Corpus, EfficientRAG, EfficientRAGConfig, RetrieverConfig, build_retriever
"""

from __future__ import annotations

from efficientrag import autoregister as _autoregister
from efficientrag.lazy import lazy_exports

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
    "Hop": "efficientrag.pipeline.trace",
    "HitRecord": "efficientrag.pipeline.trace",
    "EfficientRAGConfig": "efficientrag.pipeline.config",
    "Labeler": "efficientrag.models.wrappers",
    "Filter": "efficientrag.models.wrappers",
    "load_config": "efficientrag.config",
}

__all__ = ["__version__", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

# Saved Labeler/Filter folders load with transformers' AutoConfig/AutoModel once efficientrag is
# imported; registration waits until transformers itself is imported (no torch import here).
_autoregister.install()
