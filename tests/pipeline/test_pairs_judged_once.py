"""No (query, chunk) pair is judged twice in one question: a query the question has asked opens no
branch again, and a chunk judged for a query is not judged again for it (either guard alone keeps
the rule; the test fails when both are gone). Random worlds, every query mode and budget policy:
the traces' judged pairs and the Labeler's own calls both count each pair once per question."""

from __future__ import annotations

from collections import Counter

import pytest

from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import InfoOnlyFilter
from efficientrag.testing.word_overlap import WordOverlapRetriever
from tests.pipeline.test_rerank_policy import HashedLabeler, random_world

SETTINGS = [
    {"query_mode": "merged"},
    {"query_mode": "branch", "max_branches": 3},
    {"budget_policy": "rerank", "chunk_budget": 5, "first_top_k": 12},
    {"budget_policy": "best", "chunk_budget": 4, "floor_k": 2},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["merged", "branch", "rerank", "best-floor"])
@pytest.mark.parametrize("seed", range(4))
def test_each_query_chunk_pair_is_judged_once_per_question(seed, settings):
    corpus, questions = random_world(seed)
    labeler = HashedLabeler()
    cfg = EfficientRAGConfig(top_k=4, max_hops=4, tag_threshold=0.4, **settings)
    rag = EfficientRAG(WordOverlapRetriever(corpus), labeler, InfoOnlyFilter(), cfg)
    results = [rag.retrieve(q) for q in questions]  # one question per call: the Labeler's pairs are its own
    judged_total = 0
    for res in results:
        judged = Counter(
            (query, hit.id)
            for hop in res.trace
            for query, hits in zip(hop.queries, hop.hits, strict=True)
            for hit in hits
            if hit.tag is not None
        )
        assert judged and max(judged.values()) == 1, judged.most_common(3)
        assert res.counters["labeler_pairs"] == sum(judged.values())
        judged_total += sum(judged.values())
    assert labeler.pairs == judged_total  # the Labeler was asked for no pair the trace does not show
