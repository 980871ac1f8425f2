"""A question's seconds in reports: every timed stage once. EfficientRAG's trace times a hop's
retrieval whole and also its parts (the backend's query encoding and index search); adding both
counted the search twice in every latency column."""

from __future__ import annotations

import pytest

from efficientrag.baselines.cost import latency_s
from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.retrieval.bm25 import BM25Retriever
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)


def test_the_parts_of_a_timed_retrieval_are_not_added_again():
    assert (
        latency_s(
            {"time_retrieval_s": 0.5, "time_encode_s": 0.1, "time_search_s": 0.4, "time_labeler_s": 1.0}
        )
        == 1.5
    )
    # A method that times only the parts (no whole retrieval) still counts them.
    assert latency_s({"time_encode_s": 0.1, "time_search_s": 0.4, "llm_calls": 3.0}) == pytest.approx(0.5)


def test_the_loops_latency_is_the_sum_of_its_stages_once():
    retriever = BM25Retriever.build(Corpus(bridge_corpus()), show_progress=False)
    rag = EfficientRAG(
        retriever, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), EfficientRAGConfig(top_k=2)
    )
    method = EfficientRAGRetrieval(None, None, rag=rag)
    (pred,) = method.run_batch([Example(id="q", question=ALPHA_QUESTION, answers=[], gold_chunk_ids=[])])
    c = dict(pred.counters)
    assert {"time_retrieval_s", "time_encode_s", "time_search_s"} <= set(c)  # BM25 reports its parts
    assert c["time_encode_s"] + c["time_search_s"] <= c["time_retrieval_s"] + 1e-9
    stages = c["time_retrieval_s"] + c["time_labeler_s"] + c["time_filter_s"]
    assert latency_s(c) == pytest.approx(stages)
