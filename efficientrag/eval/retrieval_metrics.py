"""The retrieval metrics the evaluation runner scores with; they live in
:mod:`efficientrag.retrieval.metrics` (below TreeHop, whose training scores checkpoints with them)."""

from __future__ import annotations

from efficientrag.retrieval.metrics import (
    RetrievalScores,
    all_gold,
    answer_contained,
    mean_scores,
    oracle_recall,
    score_at_ks,
    score_retrieval,
    unique_in_order,
)

__all__ = [
    "RetrievalScores",
    "all_gold",
    "answer_contained",
    "mean_scores",
    "oracle_recall",
    "score_at_ks",
    "score_retrieval",
    "unique_in_order",
]
