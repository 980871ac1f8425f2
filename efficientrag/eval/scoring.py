"""Turns one method's prediction for one example into the record the runner stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from efficientrag.baselines.base import Prediction
from efficientrag.data.schema import Example
from efficientrag.eval.retrieval_metrics import score_at_ks, score_retrieval

ALL = "all"


def prediction_record(pred: Prediction, ex: Example, ks: Sequence[int]) -> dict[str, Any]:
    ids = [c.id for c in pred.chunks]
    texts = [c.contents for c in pred.chunks]
    gold = set(ex.gold_chunk_ids)
    record: dict[str, Any] = {
        "id": ex.id,
        "question": ex.question,
        "answers": ex.answers,
        "type": ex.type,
        "gold_chunk_ids": ex.gold_chunk_ids,
        "retrieved_ids": ids,
        "retrieved_scores": pred.scores,
        "hits": [i in gold for i in ids],
        "ranked": pred.ranked,
        "answer": pred.answer,
        "counters": dict(pred.counters),
        "trace": pred.trace,
    }
    if ex.gold_chunk_ids:
        if pred.ranked:
            by_k = score_at_ks(ids, texts, ex.gold_chunk_ids, ex.answers, ks)
            record["retrieval"] = {str(k): s.to_dict() for k, s in by_k.items()}
        else:
            record["retrieval"] = {ALL: score_retrieval(ids, texts, ex.gold_chunk_ids, ex.answers).to_dict()}
    if pred.raw_output is not None:
        record["raw_output"] = pred.raw_output
    return record
