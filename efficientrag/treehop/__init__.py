"""TreeHop (arXiv 2504.20114): multi-hop retrieval that rewrites the query *vector* after each hop
with a small network (next query = q - c + gate(q, c)) and never re-encodes text; the LLM-free peer
of EfficientRAG, trained here from the same gold annotations. See docs/treehop.md.

Names load on first use, so ``import efficientrag.treehop`` does not import torch.
"""

from __future__ import annotations

from efficientrag.lazy import lazy_exports

_EXPORTS = {
    "TreeHop": "efficientrag.treehop.model",
    "TreeHopConfig": "efficientrag.treehop.configuration",
    "TreeHopNetwork": "efficientrag.treehop.modeling",
    "TreeHopRetriever": "efficientrag.treehop.retriever",
    "TreeHopResult": "efficientrag.treehop.retriever",
    "TreeHopRetrievalConfig": "efficientrag.treehop.config",
    "TreeHopTrainConfig": "efficientrag.treehop.config",
    "train_treehop": "efficientrag.treehop.training",
    "derive_chains": "efficientrag.treehop.chains",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
