"""Parameter-free next-query rules for the same tree search: the ablation a learned update must beat.

``FixedUpdate("chunk")`` searches the next hop with the retrieved chunk's own vector,
``FixedUpdate("sum")`` with q + c, ``FixedUpdate("difference")`` with q - c (TreeHop's update with
the gate switched off). Each stands in for a trained :class:`~efficientrag.treehop.model.TreeHop`
(same ``config``, ``source`` and ``update``), so the tree search, pruning, trace and evaluation are
identical and only the update differs.
"""

from __future__ import annotations

import numpy as np

from efficientrag.errors import InvalidArgumentError
from efficientrag.treehop.configuration import TreeHopConfig

RULES = ("chunk", "sum", "difference")


class FixedUpdate:
    def __init__(
        self, rule: str, *, embed_dim: int, encoder_name: str, encoder_normalize: bool = True
    ) -> None:
        if rule not in RULES:
            raise InvalidArgumentError(f"rule must be one of {RULES}, got {rule!r}")
        self.rule = rule
        self.config = TreeHopConfig(
            embed_dim=embed_dim, encoder_name=encoder_name, encoder_normalize=encoder_normalize
        )
        self.source = None

    @classmethod
    def like(cls, rule: str, model) -> FixedUpdate:
        """The rule over the encoder a trained model was trained over."""
        c = model.config
        return cls(
            rule, embed_dim=c.embed_dim, encoder_name=c.encoder_name, encoder_normalize=c.encoder_normalize
        )

    def update(self, queries: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        queries = np.asarray(queries, dtype=np.float32)
        chunks = np.asarray(chunks, dtype=np.float32)
        if self.rule == "chunk":
            return chunks.copy()
        return queries + chunks if self.rule == "sum" else queries - chunks
