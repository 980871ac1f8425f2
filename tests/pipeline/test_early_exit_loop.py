"""The loop with ``exit_threshold``: a pair that left the Labeler early is recorded as such, is never
Continue (it has no word labels), keeps its estimate as its score where the budget ranks chunks,
is counted, and is not shown to a decision observer; without the setting the Labeler is called as
before."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.trace import HitRecord
from efficientrag.setting_fields import SettingError
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    CONFIDENCE,
    USEFUL_WORDS,
    ScriptedLabeler,
    scripted_rag,
)

REJECTED = {"Omega": 0.2, "Bob": 0.1, "Paris": 0.3, "Noise": 0.05, "Carla": 0.15}
EXIT_LAYER = 2


@dataclass
class ExitPrediction:
    continue_prob: float
    word_probs: list[float]
    exited_at: int | None = None


class EarlyExitLabeler(ScriptedLabeler):
    """The scripted Labeler with an exact exit head: a pair whose probability is below
    ``exit_below`` leaves with it as its estimate and no word labels."""

    def __init__(self) -> None:
        super().__init__(USEFUL_WORDS, CONFIDENCE, rejected=REJECTED)
        self.kwargs: list[dict[str, Any]] = []

    def predict(self, pairs, **kw):
        self.kwargs.append(kw)
        full = super().predict(pairs)
        below = kw.get("exit_below")
        return [
            ExitPrediction(p.continue_prob, [0.0] * len(p.word_probs), EXIT_LAYER)
            if below is not None and p.continue_prob < below
            else ExitPrediction(p.continue_prob, p.word_probs)
            for p in full
        ]


class Observer:
    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def labeled(self, question, query_words, chunk_words, pred) -> None:
        self.seen.append(chunk_words)

    def filtered(self, question, words, pred) -> None:
        pass


def test_without_the_setting_the_labeler_is_asked_as_before():
    labeler = EarlyExitLabeler()
    scripted_rag(labeler=labeler, budget_policy="rerank", chunk_budget=2).retrieve(ALPHA_QUESTION)
    assert all("exit_below" not in kw for kw in labeler.kwargs)


def test_pairs_that_left_early_are_traced_counted_ranked_by_their_estimate_and_not_observed():
    full = scripted_rag(labeler=EarlyExitLabeler(), budget_policy="rerank", chunk_budget=2)
    labeler, observer = EarlyExitLabeler(), Observer()
    rag = scripted_rag(labeler=labeler, budget_policy="rerank", chunk_budget=2, exit_threshold=0.5)
    rag.observer = observer
    res, ref = rag.retrieve(ALPHA_QUESTION), full.retrieve(ALPHA_QUESTION)
    assert all(kw["exit_below"] == 0.5 for kw in labeler.kwargs)
    judged = [h for hop in res.trace for hits in hop.hits for h in hits if h.tag is not None]
    exited = [h for h in judged if h.exited_at is not None]
    assert {h.id for h in exited} == {"bob", "omega"} | {h.id for h in judged if h.continue_prob < 0.5}
    assert all(h.exited_at == EXIT_LAYER and not h.continued and h.labeled_words == [] for h in exited)
    assert res.counters["exited_pairs"] == len(exited) and res.counters["labeler_pairs"] == len(judged)
    # The exit here is exact, so the hops and the kept chunks are the full Labeler's.
    assert res.chunk_ids == ref.chunk_ids and res.scores == pytest.approx(ref.scores)
    assert [h.queries for h in res.trace] == [h.queries for h in ref.trace]
    assert len(observer.seen) == len(judged) - len(exited)
    # The mark survives the trace's JSON.
    row = exited[0].to_dict()
    assert row["exited_at"] == EXIT_LAYER and HitRecord.from_dict(row).exited_at == EXIT_LAYER
    assert "exited_at" not in next(h for h in judged if h.exited_at is None).to_dict()


def test_a_pair_that_left_early_never_continues_even_above_the_tag_threshold():
    # Alpha (0.9) leaves below 0.95: it has no words for the Filter, so the loop cannot hop to Bob.
    res = scripted_rag(labeler=EarlyExitLabeler(), exit_threshold=0.95).retrieve(ALPHA_QUESTION)
    alpha = next(h for h in res.trace[0].hits[0] if h.id == "alpha")
    assert alpha.exited_at == EXIT_LAYER and alpha.continue_prob == pytest.approx(0.9)
    assert not alpha.continued and len(res.trace) == 1 and res.chunk_ids == []


def test_the_threshold_is_a_probability():
    with pytest.raises(SettingError, match="exit_threshold"):
        EfficientRAGConfig(exit_threshold=1.5)
    assert EfficientRAGConfig(exit_threshold=0.0).exit_threshold == 0.0
    with pytest.raises(SettingError, match="quantize='int8'") as refused:
        EfficientRAGConfig(exit_threshold=0.1, quantize="int8")
    assert refused.value.fields == ("exit_threshold", "quantize")
    assert EfficientRAGConfig(exit_threshold=0.1, quantize="auto").quantize == "auto"
