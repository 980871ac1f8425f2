"""Direct-R: one retrieval with the question, top-k chunks. With a generator it also answers."""

from __future__ import annotations

import time
from collections.abc import Sequence

from efficientrag.baselines.base import Counters, Prediction
from efficientrag.data.schema import Example
from efficientrag.retrieval.base import Retriever


class DirectRetrieval:
    """Single-shot retrieval (the paper's Direct-R without the answer call).

    Retrieves ``top_k`` once per question, batched over questions; the runner cuts the ranked list
    at each k it reports, so one run gives Direct-R@2..@20.
    """

    name = "direct"

    def __init__(self, retriever: Retriever, top_k: int = 20) -> None:
        self.retriever = retriever
        self.top_k = top_k

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        start = time.perf_counter()
        hits = self.retriever.search([ex.question for ex in examples], self.top_k)
        per_question = (time.perf_counter() - start) / max(1, len(examples))
        out = []
        for ex, hs in zip(examples, hits, strict=True):
            counters = Counters(retrieval_calls=1, time_retrieval_s=per_question)
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=[h.chunk for h in hs],
                    scores=[h.score for h in hs],
                    ranked=True,
                    counters=counters,
                )
            )
        return out
