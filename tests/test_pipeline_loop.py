from dataclasses import dataclass

import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.word_overlap import WordOverlapRetriever

STOP = ["the", "of", "is", "was", "a", "in", "by", "where", "what", "who", "which"]


@dataclass
class P:
    continue_prob: float
    word_probs: list


class ScriptedLabeler:
    """Continue iff the chunk's title is in ``useful`` and the query names it; labels the scripted
    words of that chunk."""

    def __init__(self, useful: dict[str, list[str]]):
        self.useful = useful
        self.calls: list[list[tuple[list[str], list[str]]]] = []

    def predict(self, pairs, **kw):
        self.calls.append(list(pairs))
        out = []
        for query_words, chunk_words in pairs:
            title = chunk_words[0]
            keep = set(self.useful.get(title, []))
            cont = title in self.useful and title in query_words
            out.append(P(1.0 if cont else 0.0, [1.0 if w in keep else 0.0 for w in chunk_words]))
        return out


class InfoOnlyFilter:
    """Keeps only the Info words: the next query is the newly found entity."""

    def __init__(self):
        self.calls = []

    def predict(self, word_lists, **kw):
        self.calls.append([list(w) for w in word_lists])
        out = []
        for words in word_lists:
            probs, in_info = [], False
            for i, w in enumerate(words):
                if w == "Info" and i + 1 < len(words) and words[i + 1] == ":":
                    in_info = True
                    probs.append(0.0)
                    continue
                probs.append(1.0 if in_info and w not in {":", ";"} else 0.0)
            out.append(P(0.0, probs))
        return out


@pytest.fixture()
def corpus():
    return Corpus(
        [
            Chunk("alpha", "Alpha", "Alpha is a film directed by Bob Stone."),
            Chunk("bob", "Bob", "Bob Stone was born in Paris."),
            Chunk("paris", "Paris", "Paris lies in Franconia."),
            Chunk("omega", "Omega", "Omega is a film directed by Carla Moss."),
            Chunk("carla", "Carla", "Carla Moss was born in Lyon."),
            Chunk("noise", "Noise", "Noise film noise."),
        ]
    )


Q1 = "Where was the director of Alpha film born?"
Q2 = "Where was the director of Omega film born?"
USEFUL = {"Alpha": ["Bob", "Stone"], "Bob": ["Paris"], "Omega": ["Carla", "Moss"], "Carla": ["Lyon"]}


def make(corpus, **cfg):
    retriever = WordOverlapRetriever(corpus, STOP)
    return EfficientRAG(
        retriever, ScriptedLabeler(USEFUL), InfoOnlyFilter(), EfficientRAGConfig(**cfg)
    ), retriever


def test_merged_mode_follows_the_bridge_and_stops_without_continue(corpus):
    rag, retriever = make(corpus, top_k=2, max_hops=4)
    res = rag.retrieve(Q1)
    assert res.chunk_ids == ["alpha", "bob"]
    # hop 0: question; hop 1: "Bob Stone"; hop 2: "Paris" -> only Terminate chunks -> stop.
    assert [h["queries"] for h in res.trace] == [[Q1], ["Bob Stone"], ["Paris"]]
    assert res.trace[-1]["next_queries"] == []
    assert retriever.queries == [Q1, "Bob Stone", "Paris"]
    assert res.counters["llm_calls"] == 0 and res.counters["hops"] == 3


def test_hop_limit(corpus):
    rag, _ = make(corpus, top_k=2, max_hops=1)
    res = rag.retrieve(Q1)
    assert res.chunk_ids == ["alpha"] and len(res.trace) == 1


def test_pooled_chunks_are_not_relabeled_but_rejected_ones_are_rejudged(corpus):
    rag, _ = make(corpus, top_k=3, max_hops=4)
    res = rag.retrieve(Q1)
    labeled = [(tuple(q), c[0]) for call in rag.labeler.calls for q, c in call]
    assert len(labeled) == len(set(labeled)), "a (query, chunk) pair was labeled twice"
    titles = [c for _, c in labeled]
    # alpha comes back for the query "Bob Stone" too, but it is in the pool: labeled once.
    assert titles.count("Alpha") == 1
    # bob is retrieved (and rejected) by the question, then kept for "Bob Stone".
    assert titles.count("Bob") == 2 and "bob" in res.chunk_ids
    hop1 = {r["id"]: r for r in res.trace[1]["hits"][0]}
    assert hop1["alpha"]["seen"] is True and hop1["bob"]["tag"] == "continue"


def test_chunk_budget(corpus):
    rag, _ = make(corpus, top_k=2, max_hops=4, chunk_budget=1)
    res = rag.retrieve(Q1)
    assert res.chunk_ids == ["alpha"]
    assert len(res.trace) == 1  # budget full after hop 0: no further retrieval


def test_stop_when_nothing_continues(corpus):
    retriever = WordOverlapRetriever(corpus, STOP)
    rag = EfficientRAG(retriever, ScriptedLabeler({}), InfoOnlyFilter(), EfficientRAGConfig(top_k=3))
    res = rag.retrieve(Q1)
    assert res.chunks == [] and len(res.trace) == 1 and rag.filter.calls == []


def test_branch_mode_one_query_per_continue_chunk_with_cap(corpus):
    q = "Which film was directed by Alpha or Omega?"
    rag, _ = make(corpus, top_k=2, max_hops=2, query_mode="branch", max_branches=2)
    res = rag.retrieve(q)
    assert sorted(res.trace[1]["queries"]) == ["Bob Stone", "Carla Moss"]
    assert set(res.chunk_ids) == {"alpha", "omega", "bob", "carla"}
    # The Filter saw one Info block per branch.
    assert all(w.count("Info") == 1 for w in rag.filter.calls[0])
    capped, _ = make(corpus, top_k=2, max_hops=2, query_mode="branch", max_branches=1)
    assert len(capped.retrieve(q).trace[1]["queries"]) == 1


def test_merged_mode_puts_all_infos_in_one_filter_input(corpus):
    q = "Which film was directed by Alpha or Omega?"
    rag, _ = make(corpus, top_k=2, max_hops=2, query_mode="merged")
    res = rag.retrieve(q)
    assert len(rag.filter.calls[0]) == 1 and rag.filter.calls[0][0].count("Info") == 2
    assert len(res.trace[1]["queries"]) == 1


def test_batch_equals_one_by_one(corpus):
    rag, _ = make(corpus, top_k=2, max_hops=4)
    batch = rag.retrieve_batch([Q1, Q2])
    single = [make(corpus, top_k=2, max_hops=4)[0].retrieve(q) for q in (Q1, Q2)]
    for b, s in zip(batch, single, strict=True):
        assert b.chunk_ids == s.chunk_ids
        assert [h["queries"] for h in b.trace] == [h["queries"] for h in s.trace]
        assert [[r["id"] for r in rows] for h in b.trace for rows in h["hits"]] == [
            [r["id"] for r in rows] for h in s.trace for rows in h["hits"]
        ]
    assert batch[1].chunk_ids == ["omega", "carla"]
    # One Labeler call per hop for the whole batch.
    assert len(rag.labeler.calls) == 3


def test_trace_is_complete(corpus):
    rag, _ = make(corpus, top_k=2)
    res = rag.retrieve(Q1)
    for hop in res.trace:
        assert set(hop) >= {"hop", "queries", "hits", "next_queries", "timings_s"}
        assert set(hop["timings_s"]) == {"retrieval", "labeler", "filter"}
        for rows in hop["hits"]:
            for row in rows:
                assert {"id", "score", "seen"} <= set(row)
                if not row["seen"]:
                    assert row["tag"] in {"continue", "terminate"} and "labeled_words" in row
    first = {r["id"]: r for r in res.trace[0]["hits"][0]}
    assert first["alpha"]["labeled_words"] == ["Bob", "Stone"]


def test_trace_renders_every_hop(corpus):
    from efficientrag.pipeline.trace_format import format_result

    rag, _ = make(corpus, top_k=2)
    text = format_result(rag.retrieve(Q1))
    assert "Hop 1" in text and "Hop 3" in text
    assert "next query: Bob Stone" in text and "labeled: Bob Stone" in text
    assert "Kept 2 chunks" in text and "[bob]" in text
