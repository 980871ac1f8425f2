"""The loop's full output, pinned against golden records written by the code before the trace was typed
and ``_hop`` was split (tests/fixtures/efficientrag_traces.jsonl).

Each scenario runs a batch of questions through the scripted bridge world with a setting that takes
a different path through a hop (branch and merged queries, the floor, both budget policies,
``fill_budget``, a Labeler that cuts long queries, a retriever that splits its time). A fake clock
makes the per-hop timings (and so their per-question shares) deterministic. The records are
compared as JSON text, key order included, because that is what predictions.jsonl and
``efficientrag retrieve --json`` write.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    CONFIDENCE,
    OMEGA_QUESTION,
    STOPWORDS,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.word_overlap import WordOverlapRetriever

GOLDEN = Path(__file__).parents[1] / "fixtures" / "efficientrag_traces.jsonl"
BOTH_QUESTION = "Which film was directed by Alpha or Omega?"

SCENARIOS: dict[str, tuple[dict, list[str]]] = {
    "branch_floor_truncated": (
        dict(top_k=3, max_hops=4, query_mode="branch", max_branches=2, floor_k=1),
        [BOTH_QUESTION, ALPHA_QUESTION, OMEGA_QUESTION],
    ),
    "merged_best_budget_fill": (
        dict(top_k=3, max_hops=4, floor_k=2, chunk_budget=3, budget_policy="best", fill_budget=True),
        [ALPHA_QUESTION, OMEGA_QUESTION, BOTH_QUESTION],
    ),
    "branch_first_budget": (
        dict(top_k=2, max_hops=3, query_mode="branch", max_branches=3, chunk_budget=3),
        [BOTH_QUESTION, ALPHA_QUESTION],
    ),
    "merged_plain": (dict(top_k=2, max_hops=4), [ALPHA_QUESTION, OMEGA_QUESTION, "Noise film?"]),
}


@dataclass
class _CutPrediction:
    continue_prob: float
    word_probs: list[float]
    query_truncated_words: int


class _CuttingLabeler(ScriptedLabeler):
    """Reports queries over six words as cut, like a Labeler whose input limit they exceed."""

    def predict(self, pairs, **kw):
        preds = super().predict(pairs, **kw)
        return [
            _CutPrediction(p.continue_prob, p.word_probs, max(0, len(q) - 6))
            for p, (q, _) in zip(preds, pairs, strict=True)
        ]


class _TimedRetriever(WordOverlapRetriever):
    def search(self, queries, k):
        self.last_timings = {"encode": 0.25 * len(queries), "search": 0.5 * len(queries)}
        return super().search(queries, k)


class _Clock:
    """Each reading is later than the last by a growing step, so every timed stage lasts a different,
    reproducible time."""

    def __init__(self) -> None:
        self.now, self.calls = 0.0, 0

    def __call__(self) -> float:
        self.calls += 1
        self.now += 0.001 * self.calls
        return self.now


def run_scenario(name: str) -> list[dict]:
    config, questions = SCENARIOS[name]
    retriever = _TimedRetriever(bridge_corpus(), STOPWORDS)
    labeler = _CuttingLabeler(USEFUL_WORDS, CONFIDENCE)
    rag = EfficientRAG(retriever, labeler, InfoOnlyFilter(), EfficientRAGConfig(**config))
    return [
        {
            "scenario": name,
            "question": r.question,
            "chunk_ids": r.chunk_ids,
            "scores": r.scores,
            "counters": r.counters,
            "trace": [hop.to_dict() for hop in r.trace],
        }
        for r in rag.retrieve_batch(questions)
    ]


def _golden() -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        lines.setdefault(json.loads(line)["scenario"], []).append(line)
    return lines


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_loop_writes_the_golden_records(name, monkeypatch):
    monkeypatch.setattr(time, "perf_counter", _Clock())
    got = [json.dumps(record) for record in run_scenario(name)]
    assert got == _golden()[name]


def test_the_golden_records_cover_every_path_of_a_hop():
    """Guards the goldens themselves: each branch of a hop shows up somewhere in them."""
    records = [json.loads(line) for lines in _golden().values() for line in lines]
    hops = [hop for r in records for hop in r["trace"]]
    rows = [row for hop in hops for rows in hop["hits"] for row in rows]
    assert any(row["seen"] for row in rows) and any(row.get("floor") for row in rows)
    assert {row.get("tag") for row in rows} == {None, "continue", "terminate"}
    assert any("truncated_query_words" in hop for hop in hops)
    assert any(len(hop["queries"]) > 1 for hop in hops)  # a hop with several branches
    assert any(r["counters"].get("filled") for r in records)
    assert any(
        set(hop["timings_s"]) == {"retrieval", "encode", "search", "labeler", "filter"} for hop in hops
    )
    assert any(r["chunk_ids"] == [] for r in records)


def test_predictions_carry_the_same_hops_as_the_golden_records(monkeypatch):
    """What an evaluation writes to predictions.jsonl (``trace.hops``) is the golden trace."""
    from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
    from efficientrag.data.schema import Example

    monkeypatch.setattr(time, "perf_counter", _Clock())
    config, questions = SCENARIOS["branch_floor_truncated"]
    rag = EfficientRAG(
        _TimedRetriever(bridge_corpus(), STOPWORDS),
        _CuttingLabeler(USEFUL_WORDS, CONFIDENCE),
        InfoOnlyFilter(),
        EfficientRAGConfig(**config),
    )
    examples = [
        Example(id=f"q{i}", question=q, answers=[], gold_chunk_ids=[]) for i, q in enumerate(questions)
    ]
    preds = EfficientRAGRetrieval(rag.retriever, None, rag=rag).run_batch(examples)
    golden = [json.loads(line)["trace"] for line in _golden()["branch_floor_truncated"]]
    assert [json.dumps(p.trace["hops"]) for p in preds] == [json.dumps(t) for t in golden]
    assert preds[0].counters["time_labeler_s"] == pytest.approx(
        sum(h["timings_s"]["labeler"] for h in golden[0])
    )


def test_a_hit_row_reads_back_and_a_row_without_its_id_is_named():
    from efficientrag.pipeline.trace import HitRecord

    rows = [json.loads(line) for lines in _golden().values() for line in lines]
    for row in (row for r in rows for hop in r["trace"] for hits in hop["hits"] for row in hits):
        assert HitRecord.from_dict(row).to_dict() == row
    with pytest.raises(ValueError, match=r"p\.jsonl:3: field 'id' missing"):
        HitRecord.from_dict({"score": 1.0, "seen": False}, where="p.jsonl:3")
