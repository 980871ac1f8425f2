"""Scores a TreeHop model by the search it will be used for: the tree search over each pool's own
index, on questions training never saw, with the protocol's score (mean over pools of
(recall + all-gold) / 2, :func:`efficientrag.retrieval.metrics.protocol_score`). Checkpoints and
settings are chosen with it, never with a loss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from efficientrag.data.schema import Example
from efficientrag.retrieval.metrics import mean_scores, score_retrieval
from efficientrag.treehop.config import TreeHopRetrievalConfig
from efficientrag.treehop.model import TreeHop
from efficientrag.treehop.retriever import TreeHopRetriever


def search_scores(
    model: TreeHop,
    retrievers: Mapping[str, Any],
    examples: Mapping[str, Sequence[Example]],
    settings: TreeHopRetrievalConfig,
    *,
    batch_size: int = 64,
    question_vectors: dict[str, np.ndarray] | None = None,
) -> dict[str, dict[str, float]]:
    """Per pool: recall, all-gold, answer recall (%) and chunks per question.

    ``question_vectors``: a dict this function fills (pool -> encoded questions) and reuses, so
    that evaluating a model every epoch encodes the questions once."""
    out = {}
    for name, exs in examples.items():
        exs = [ex for ex in exs if ex.gold_chunk_ids]
        if not exs:
            continue
        search = TreeHopRetriever(retrievers[name], model, settings)
        vecs = None if question_vectors is None else question_vectors.get(name)
        if vecs is None:
            vecs = search.vectors.encode_questions([ex.question for ex in exs])
            if question_vectors is not None:
                question_vectors[name] = vecs
        scores = []
        for start in range(0, len(exs), batch_size):
            batch = exs[start : start + batch_size]
            results = search.retrieve_batch(
                [ex.question for ex in batch], question_vectors=vecs[start : start + batch_size]
            )
            for ex, res in zip(batch, results, strict=True):
                scores.append(
                    score_retrieval(
                        res.chunk_ids, [c.contents for c in res.chunks], ex.gold_chunk_ids, ex.answers
                    )
                )
        out[name] = mean_scores(scores)
    return out
