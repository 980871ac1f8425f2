"""TreeHop as an evaluation method (``efficientrag eval --method treehop``): the same records,
metrics and counters as Direct-R and EfficientRAG.

The chunks are scored as one set with their count (like EfficientRAG's). A run with ``hops=H``
also reports the runs with fewer hops as views (``hops=1`` ... ``hops=H-1``): the layers are pruned
one at a time, so a shorter run is exactly the first layers of a longer one. With
``eval.answer=true`` the one answer call reads every chunk TreeHop returned.

Importing this module (the registry does, to list the methods) does not import torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from efficientrag.baselines.answering import answer_if_asked
from efficientrag.baselines.base import Counters, Method, Prediction, SharedSettings
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.treehop.config import TreeHopRetrievalConfig

if TYPE_CHECKING:
    from efficientrag.treehop.retriever import TreeHopRetriever
    from efficientrag.treehop.tagged import TaggedTreeHop


class TreeHopRetrieval(Method):
    name = "treehop"
    config_class = TreeHopRetrievalConfig
    config_key = "treehop"
    cfg: TreeHopRetrievalConfig
    retrieval_only = True

    treehop: TreeHopRetriever | None = None

    @classmethod
    def settings(cls, cfg: Any) -> TreeHopRetrievalConfig:
        """The experiment config's own ``treehop:`` section (not one under ``baselines:``)."""
        return cfg.treehop

    @classmethod
    def over(cls, treehop: TreeHopRetriever, *, shared: SharedSettings | None = None) -> TreeHopRetrieval:
        """The method around a TreeHopRetriever already built (its model loaded)."""
        method = cls.__new__(cls)
        method.treehop = treehop
        Method.__init__(method, treehop.retriever, None, treehop.config, shared=shared)
        return method

    def setup(self) -> None:
        """Built from ``cfg`` (``model`` names the trained folder) unless :meth:`over` gave one."""
        if self.treehop is None:
            if self.retriever is None:
                raise InvalidArgumentError(
                    "TreeHopRetrieval needs a dense retriever to search (or TreeHopRetrieval.over)"
                )
            from efficientrag.treehop.retriever import TreeHopRetriever

            self.treehop = TreeHopRetriever.from_config(self.retriever, self.cfg)

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        results = self.treehop.retrieve_batch([ex.question for ex in examples])
        preds = [treehop_prediction(ex.id, res) for ex, res in zip(examples, results, strict=True)]
        return answer_if_asked(
            self, examples, preds, top_k=None, max_new_tokens=self.cfg.answer_max_new_tokens
        )


class TaggedTreeHopRetrieval:
    """TreeHop + the Labeler's tag (``treehop/tagged.py``) as an evaluation method: records like
    TreeHop's, with the tags in the trace."""

    name = "treehop_tagged"

    def __init__(self, tagged: TaggedTreeHop) -> None:
        self.tagged = tagged

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        found = self.tagged.retrieve_with_tags([e.question for e in examples])
        return [
            treehop_prediction(ex.id, res, views=False, tags=tags)
            for ex, (res, tags) in zip(examples, found, strict=True)
        ]


def treehop_prediction(example_id: str, res: Any, *, views: bool = True, **extra_trace: Any) -> Prediction:
    """One question's record: the chunk set, every layer, each chunk's hop, and (``views``) the
    fewer-hop runs."""
    trace: dict[str, Any] = {
        "hops": [layer.to_dict() for layer in res.trace],
        "chunk_hops": res.hops,
        **extra_trace,
    }
    fewer = {f"hops={h}": {"chunk_ids": [c.id for c in res.up_to(h)]} for h in range(1, len(res.trace))}
    if views and fewer:
        trace["views"] = fewer
    return Prediction(
        example_id=example_id,
        chunks=res.chunks,
        scores=res.scores,
        ranked=False,
        trace=trace,
        counters=Counters(res.counters),
    )
