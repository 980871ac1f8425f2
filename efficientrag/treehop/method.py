"""TreeHop as an evaluation method (``efficientrag eval --method treehop``): the same records,
metrics and counters as Direct-R and EfficientRAG.

The chunks are scored as one set with their count (like EfficientRAG's). A run with ``hops=H``
also reports the runs with fewer hops as views (``hops=1`` ... ``hops=H-1``): the layers are pruned
one at a time, so a shorter run is exactly the first layers of a longer one.

Importing this module (the registry does, to list the methods) does not import torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from efficientrag.baselines.base import Counters, Prediction
from efficientrag.data.schema import Example

if TYPE_CHECKING:
    from efficientrag.baselines.base import Method
    from efficientrag.baselines.registry import GeneratorSource
    from efficientrag.experiment import ExperimentConfig
    from efficientrag.retrieval.base import Retriever
    from efficientrag.treehop.retriever import TreeHopRetriever


class TreeHopRetrieval:
    name = "treehop"

    def __init__(self, treehop: TreeHopRetriever) -> None:
        self.treehop = treehop

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        results = self.treehop.retrieve_batch([ex.question for ex in examples])
        out = []
        for ex, res in zip(examples, results, strict=True):
            views = {
                f"hops={h}": {"chunk_ids": [c.id for c in res.up_to(h)]} for h in range(1, len(res.trace))
            }
            trace = {"hops": [layer.to_dict() for layer in res.trace], "chunk_hops": res.hops}
            if views:
                trace["views"] = views
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=res.chunks,
                    scores=res.scores,
                    ranked=False,
                    trace=trace,
                    counters=Counters(res.counters),
                )
            )
        return out


def _treehop(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.answering import with_answer_call
    from efficientrag.treehop.retriever import TreeHopRetriever

    method = TreeHopRetrieval(TreeHopRetriever.from_config(retriever, cfg.treehop))
    # With eval.answer=true the one answer call reads every chunk TreeHop returned.
    return with_answer_call(
        cfg, method, generator, top_k=None, max_new_tokens=cfg.baselines.direct_r.max_new_tokens
    )


# Merged into efficientrag.baselines.registry (FAMILY_MODULES).
FACTORIES = {"treehop": _treehop}
