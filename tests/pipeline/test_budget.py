"""The chunk budget's last step (efficientrag.pipeline.budget): the loop chooses through it, and a
recorded trace replays it. Under a "best" budget the hops never depend on the replayable settings, so
a replay of any of them must equal running the loop with it."""

from __future__ import annotations

import dataclasses

import pytest

from efficientrag.pipeline.budget import Judgements, choose_chunks, judgements_from_trace
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.pipeline.trace import trace_to_dicts
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    STOPWORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.word_overlap import WordOverlapRetriever

QUESTIONS = [ALPHA_QUESTION, OMEGA_QUESTION, "Which film was directed by Alpha or Omega?"]
# Continue probabilities of the chunks the scripted Labeler rejects, so every order is decided.
GRADED = {"Omega": 0.2, "Paris": 0.4, "Carla": 0.3, "Noise": 0.05, "Bob": 0.1}


def run(cfg: EfficientRAGConfig):
    labeler = ScriptedLabeler(USEFUL, {"Alpha": 0.9, "Bob": 0.7, "Omega": 0.8, "Carla": 0.6}, rejected=GRADED)
    rag = EfficientRAG(WordOverlapRetriever(bridge_corpus(), STOPWORDS), labeler, InfoOnlyFilter(), cfg)
    return rag.retrieve_batch(QUESTIONS)


BASES = [
    EfficientRAGConfig(top_k=3, max_hops=4, chunk_budget=3, budget_policy="best", floor_k=1),
    EfficientRAGConfig(top_k=4, max_hops=3, chunk_budget=2, budget_policy="best", query_mode="branch"),
    EfficientRAGConfig(top_k=3, max_hops=4),  # no budget: the loop keeps its whole pool
]
VARIANTS = [
    {},
    {"chunk_budget": 4, "fill_budget": True},
    {"chunk_budget": 5, "fill_budget": True, "fill_from": "labeled"},
    {"chunk_budget": 3, "fill_budget": True, "fill_from": "labeled", "rank_weight": 0.3},
    {"chunk_budget": 2, "rank_weight": 0.5},
    {"chunk_budget": 3, "budget_policy": "rerank"},
    {"chunk_budget": 4, "budget_policy": "rerank", "hop_calibration": [[1.0, 0.0], [0.5, -1.0]]},
    {"chunk_budget": 3, "fill_budget": True, "fill_from": "labeled", "hop_calibration": [[2.0, 1.0]]},
    {"chunk_budget": 3, "budget_policy": "rerank", "hop_calibration": [[1.0, 0.0, -2.0], [1.0, -0.5, 0.5]]},
]


@pytest.mark.parametrize("base", BASES, ids=["floor", "branch", "no-budget"])
def test_a_replay_of_the_trace_is_the_loop_run_with_that_setting(base):
    recorded = run(base)
    for res in recorded:
        j = judgements_from_trace(trace_to_dicts(res.trace))
        assert [c for c, _ in choose_chunks(j, base)[0]] == res.chunk_ids  # its own setting first
    for changes in VARIANTS:
        if base.chunk_budget is None and (changes.get("rank_weight") or changes.get("hop_calibration")):
            changes = {"budget_policy": "best", **changes}
        cfg = dataclasses.replace(base, **changes)
        for res, rerun in zip(recorded, run(cfg), strict=True):
            chosen = choose_chunks(judgements_from_trace(trace_to_dicts(res.trace)), cfg)[0]
            assert [c for c, _ in chosen] == rerun.chunk_ids, (base, changes, res.question)
            assert [p for _, p in chosen] == pytest.approx(rerun.scores)
            assert [h.queries for h in rerun.trace] == [h.queries for h in res.trace]  # same hops


def test_choose_chunks_floor_first_then_scores_then_fill():
    j = Judgements(
        pool={"f": 0.1, "a": 0.6, "b": 0.7},
        floor={"f"},
        first_hits=[("f", 0.1), ("x", 0.3), ("y", 0.4)],
        judged={"f": 0.1, "x": 0.3, "a": 0.6, "y": 0.45, "b": 0.7, "z": 0.2},
        best_rank={"f": 0, "x": 1, "y": 2, "a": 5, "b": 9, "z": 0},
    )
    cfg = EfficientRAGConfig(chunk_budget=2, budget_policy="best")
    assert choose_chunks(j, cfg) == ([("f", 0.1), ("b", 0.7)], None)
    weighted = dataclasses.replace(cfg, rank_weight=0.5)  # a: 0.6 + 0.5/6 = 0.683; b: 0.7 + 0.05
    assert choose_chunks(j, weighted)[0] == [("f", 0.1), ("b", 0.7)]
    assert choose_chunks(j, dataclasses.replace(cfg, rank_weight=2.0))[0] == [("f", 0.1), ("a", 0.6)]
    fill = EfficientRAGConfig(chunk_budget=5, budget_policy="best", fill_budget=True)
    assert choose_chunks(j, fill) == ([("f", 0.1), ("a", 0.6), ("b", 0.7), ("x", 0.3), ("y", 0.4)], 2)
    labeled = dataclasses.replace(fill, fill_from="labeled")
    assert choose_chunks(j, labeled) == ([("f", 0.1), ("a", 0.6), ("b", 0.7), ("y", 0.45), ("x", 0.3)], 2)
    # z was found first by some query (rank 0): w = 0.5 lifts it over x and y.
    assert choose_chunks(j, dataclasses.replace(labeled, rank_weight=0.5))[0][3:] == [("z", 0.2), ("y", 0.45)]


def test_a_trace_hit_without_its_fields_is_named():
    with pytest.raises(ValueError, match=r"run 3: hops\[0\]\.hits\[0\]\[1\]: field 'seen' missing"):
        judgements_from_trace(
            [{"hits": [[{"id": "a", "score": 1.0, "seen": False}, {"id": "b", "score": 0.5}]]}], where="run 3"
        )
