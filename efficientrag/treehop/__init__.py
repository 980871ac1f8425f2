"""TreeHop (arXiv 2504.20114): multi-hop retrieval that rewrites the query *vector* after each hop
with a small network (next query = q - c + gate(q, c)) and never re-encodes text; the LLM-free peer
of EfficientRAG, trained here from the same gold annotations. See docs/treehop.md.

Names load on first use, so ``import efficientrag.treehop`` does not import torch.
"""

from __future__ import annotations

from efficientrag.lazy import by_module, lazy_exports

_EXPORTS = by_module(
    __name__,
    {
        "model": ("TreeHop",),
        "configuration": ("TreeHopConfig",),
        "modeling": ("TreeHopNetwork",),
        "retriever": ("TreeHopRetriever", "TreeHopResult"),
        "config": ("TreeHopRetrievalConfig", "TreeHopTrainConfig"),
        "training": ("train_treehop",),
        "chains": ("derive_chains",),
    },
)

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
