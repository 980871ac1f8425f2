"""EfficientRAG as an evaluation method: the same records and metrics as Direct-R."""

from __future__ import annotations

from collections.abc import Sequence

from efficientrag.baselines.base import Counters, Prediction
from efficientrag.data.schema import Example
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.pipeline.trace import trace_to_dicts


class EfficientRAGRetrieval:
    """Retrieval only: the chunks the loop kept (scored as one set, with their count)."""

    name = "efficientrag"

    def __init__(self, rag: EfficientRAG) -> None:
        self.rag = rag

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        results = self.rag.retrieve_batch([ex.question for ex in examples])
        out = []
        for ex, res in zip(examples, results, strict=True):
            counters = Counters(res.counters)
            for hop in res.trace:
                for stage, seconds in hop.timings_s.items():
                    counters.add(f"time_{stage}_s", seconds)
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=res.chunks,
                    scores=res.scores,
                    ranked=False,
                    trace={"hops": trace_to_dicts(res.trace)},
                    counters=counters,
                )
            )
        return out
