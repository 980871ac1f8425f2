"""Scores a cross-encoder by the job it will do: rerank each validation question's top ``eval_top_n``
hits from the pool's own search and keep ``eval_k``; recall and all-gold at ``eval_k`` per training
file, and the protocol's score (mean over files of (recall + all-gold) / 2,
:func:`efficientrag.retrieval.metrics.protocol_score`). The epoch is chosen with it, never with a
loss. The search runs once; every evaluation only rescores the same pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sentence_transformers.base.evaluation import BaseEvaluator

from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.metrics import mean_scores, protocol_score, score_retrieval
from efficientrag.training.pool import Pool


@dataclass
class _Searched:
    """One pool's validation questions with their top-N hits (searched once)."""

    examples: list[Example]
    hits: list[list[Chunk]]


class RerankValidation(BaseEvaluator):
    """A sentence-transformers evaluator: the trainer calls it after every epoch.

    Args:
        pools: The training files, each with its search.
        validation: Per pool name, its validation questions (those with gold chunks).
        top_n: Hits reranked per question.
        k: Chunks kept; recall and all-gold are measured at this count.
        batch_size: Pairs per forward pass.
        progress: Show a progress bar while scoring.
    """

    def __init__(
        self,
        pools: Sequence[Pool],
        validation: Mapping[str, Sequence[Example]],
        *,
        top_n: int,
        k: int,
        batch_size: int = 64,
        progress: bool = False,
    ) -> None:
        super().__init__()
        self.primary_metric = "score"
        self.greater_is_better = True
        self.k, self.batch_size, self.progress = k, batch_size, progress
        self.searched: dict[str, _Searched] = {}
        for pool in pools:
            examples = list(validation.get(pool.name, ()))
            if not examples:
                continue
            results = pool.retriever.search([ex.question for ex in examples], top_n)
            self.searched[pool.name] = _Searched(examples, [[h.chunk for h in hits] for hits in results])
        if not self.searched:
            raise InvalidArgumentError(
                "no validation question with gold chunks in any training file: raise validation_ratio "
                "or check the files' gold annotations"
            )

    def direct(self) -> dict[str, dict[str, float]]:
        """The search alone at ``k`` (no reranking), per pool: the bar the reranker must clear."""
        return {
            name: _scores(s.examples, [hits[: self.k] for hits in s.hits])
            for name, s in self.searched.items()
        }

    def per_pool(self, model: Any) -> dict[str, dict[str, float]]:
        """Per pool: recall, all-gold, answer recall (%) and chunks per question after reranking.

        Args:
            model: A ``sentence_transformers.CrossEncoder``.
        """
        out = {}
        for name, s in self.searched.items():
            pairs = [
                (ex.question, c.contents) for ex, hits in zip(s.examples, s.hits, strict=True) for c in hits
            ]
            scores = np.asarray(
                model.predict(pairs, batch_size=self.batch_size, show_progress_bar=self.progress)
                if pairs
                else [],
                dtype=np.float64,
            ).reshape(-1)
            kept, start = [], 0
            for hits in s.hits:
                mine = scores[start : start + len(hits)]
                start += len(hits)
                order = np.argsort(-mine, kind="stable")[: self.k]
                kept.append([hits[i] for i in order])
            out[name] = _scores(s.examples, kept)
        return out

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """Rerank every pool's validation questions with ``model``.

        Returns:
            ``score`` (the protocol's) and ``<pool>_recall`` / ``<pool>_all_gold`` for each pool.
        """
        per_pool = self.per_pool(model)
        metrics = {"score": protocol_score(per_pool)}
        for name, scores in per_pool.items():
            metrics[f"{name}_recall"] = scores["recall"]
            metrics[f"{name}_all_gold"] = scores["all_gold"]
        return metrics


def _scores(examples: Sequence[Example], kept: Sequence[Sequence[Chunk]]) -> dict[str, float]:
    return mean_scores(
        [
            score_retrieval(
                [c.id for c in chunks], [c.contents for c in chunks], ex.gold_chunk_ids, ex.answers
            )
            for ex, chunks in zip(examples, kept, strict=True)
        ]
    )
