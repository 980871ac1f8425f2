"""Turns one method's prediction for one example into the record the runner stores.

Retrieval scores go under ``record["retrieval"]`` (per cut-off k for a ranked list, "all" for a
set). A prediction with an answer also gets ``record["qa"]`` = {em, f1, contained} (see
:mod:`efficientrag.eval.qa_metrics`), plus ``acc`` when a judge gave a verdict. A method may
expose views of its work in ``trace["views"]`` (``{name: {"chunk_ids": [...], "answer": ...}}``,
e.g. Iter-RetGen after fewer iterations); each is scored the same way under ``record["views"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from efficientrag.baselines.base import Prediction
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.eval.qa_metrics import score_answer
from efficientrag.retrieval.metrics import score_at_ks, score_retrieval

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
    # A closed-book method (Direct, CoT) retrieves nothing by design: no retrieval scores, rather
    # than a misleading recall of 0.
    if ex.gold_chunk_ids and not pred.trace.get("closed_book"):
        if pred.ranked:
            by_k = score_at_ks(ids, texts, ex.gold_chunk_ids, ex.answers, ks)
            record["retrieval"] = {str(k): s.to_dict() for k, s in by_k.items()}
        else:
            record["retrieval"] = {ALL: score_retrieval(ids, texts, ex.gold_chunk_ids, ex.answers).to_dict()}
    judge = pred.trace.get("judge") or {}
    if pred.answer is not None and ex.answers:
        record["qa"] = _qa(pred.answer, ex.answers, judge.get("main"))
    views = _views(pred, ex, judge.get("views") or {})
    if views:
        record["views"] = views
    if pred.raw_output is not None:
        record["raw_output"] = pred.raw_output
    return record


def _qa(answer: str, answers: Sequence[str], verdict: dict[str, Any] | None) -> dict[str, float]:
    qa = score_answer(answer, answers).to_dict()
    if verdict is not None:
        qa["acc"] = 1.0 if verdict.get("correct") else 0.0
        qa["judge_failed"] = 1.0 if verdict.get("correct") is None else 0.0
    return qa


def _views(pred: Prediction, ex: Example, verdicts: dict[str, Any]) -> dict[str, Any]:
    views = pred.trace.get("views") or {}
    if not views:
        return {}
    texts = {c.id: c.contents for c in pred.chunks}
    out: dict[str, Any] = {}
    for name, view in views.items():
        scored: dict[str, Any] = {}
        ids = [str(i) for i in view.get("chunk_ids") or []]
        missing = [i for i in ids if i not in texts]
        if missing:
            raise InvalidArgumentError(
                f"view {name!r} of example {ex.id} names chunks the prediction lacks: {missing[:3]}"
            )
        if ex.gold_chunk_ids:
            scored["retrieval"] = score_retrieval(
                ids, [texts[i] for i in ids], ex.gold_chunk_ids, ex.answers
            ).to_dict()
        if view.get("answer") is not None and ex.answers:
            scored["qa"] = _qa(view["answer"], ex.answers, verdicts.get(name))
        out[name] = scored
    return out
