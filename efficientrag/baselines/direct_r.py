"""Direct-R: one retrieval with the question, top-k chunks. When the run asks for answers, one
answer call reads the top ``top_k`` of them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.baselines.answering import answer_if_asked
from efficientrag.baselines.base import Counters, Method, Prediction, SharedSettings
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Example
from efficientrag.retrieval.base import Retriever
from efficientrag.setting_fields import ANSWER_ONLY, bounded


@dataclass
class DirectRConfig(Settings):
    """Direct-R: one retrieval with the question; the answer call reads the top ``top_k`` chunks
    (the paper's Direct-R@10). Retrieval metrics are still reported at every ``eval.ks``."""

    top_k: int = bounded(10, low=1, roles=[ANSWER_ONLY])
    max_new_tokens: int = bounded(128, low=1, roles=[ANSWER_ONLY])


class DirectRetrieval(Method):
    """Single-shot retrieval, batched over questions. It retrieves to the largest ``eval.ks`` (and
    at least ``top_k`` when answering); the runner cuts the ranked list at each k it reports, so one
    run gives Direct-R@2..@20."""

    name = "direct_r"
    config_class = DirectRConfig
    cfg: DirectRConfig
    retrieval_only = True

    @classmethod
    def ranking(cls, retriever: Retriever, ks: Sequence[int]) -> DirectRetrieval:
        """The search's own order, retrieved to the largest of ``ks`` and no answer asked: the
        ranked list a retrieval-only comparison scores at each k.

        Args:
            retriever: the backend searched.
            ks: the cut-offs the run reports.
        """
        return cls(retriever, None, shared=SharedSettings(ks=tuple(ks)))

    @property
    def depth(self) -> int:
        ks = self.shared.ks
        return max(ks) if ks and not self.shared.answer else max([*ks, self.cfg.top_k])

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        start = time.perf_counter()
        hits = self.retriever.search([ex.question for ex in examples], self.depth)  # type: ignore[union-attr]
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
        return answer_if_asked(
            self, examples, out, top_k=self.cfg.top_k, max_new_tokens=self.cfg.max_new_tokens
        )
