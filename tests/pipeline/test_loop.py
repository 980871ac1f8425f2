import pytest

from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import ALPHA_QUESTION as Q1
from efficientrag.testing.scripted_models import OMEGA_QUESTION as Q2
from efficientrag.testing.scripted_models import STOPWORDS as STOP
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.scripted_models import InfoOnlyFilter, ScriptedLabeler, bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever


@pytest.fixture()
def corpus():
    return bridge_corpus()


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
    assert [h.queries for h in res.trace] == [[Q1], ["Bob Stone"], ["Paris"]]
    assert res.trace[-1].next_queries == []
    assert retriever.queries == [Q1, "Bob Stone", "Paris"]
    assert res.counters["llm_calls"] == 0 and res.counters["hops"] == 3


def test_hop_limit(corpus):
    rag, _ = make(corpus, top_k=2, max_hops=1)
    res = rag.retrieve(Q1)
    assert res.chunk_ids == ["alpha"] and len(res.trace) == 1


@pytest.mark.parametrize("max_hops", [1, 2])
def test_the_last_hop_writes_no_next_query(corpus, max_hops):
    # A next query after the last hop would never be searched: the Filter is not run for it.
    rag, _ = make(corpus, top_k=2, max_hops=max_hops)
    res = rag.retrieve(Q1)
    assert len(res.trace) == max_hops and res.trace[-1].next_queries == []
    assert len(rag.filter.calls) == max_hops - 1
    assert res.counters.get("filter_calls", 0.0) == max_hops - 1


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
    hop1 = {r.id: r for r in res.trace[1].hits[0]}
    assert hop1["alpha"].seen is True and hop1["bob"].tag == "continue"


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
    assert sorted(res.trace[1].queries) == ["Bob Stone", "Carla Moss"]
    assert set(res.chunk_ids) == {"alpha", "omega", "bob", "carla"}
    # The Filter saw one Info block per branch.
    assert all(w.count("Info") == 1 for w in rag.filter.calls[0])
    capped, _ = make(corpus, top_k=2, max_hops=2, query_mode="branch", max_branches=1)
    assert len(capped.retrieve(q).trace[1].queries) == 1


def test_merged_mode_puts_all_infos_in_one_filter_input(corpus):
    q = "Which film was directed by Alpha or Omega?"
    rag, _ = make(corpus, top_k=2, max_hops=2, query_mode="merged")
    res = rag.retrieve(q)
    assert len(rag.filter.calls[0]) == 1 and rag.filter.calls[0][0].count("Info") == 2
    assert len(res.trace[1].queries) == 1


def test_batch_equals_one_by_one(corpus):
    rag, _ = make(corpus, top_k=2, max_hops=4)
    batch = rag.retrieve_batch([Q1, Q2])
    single = [make(corpus, top_k=2, max_hops=4)[0].retrieve(q) for q in (Q1, Q2)]
    for b, s in zip(batch, single, strict=True):
        assert b.chunk_ids == s.chunk_ids
        assert [h.queries for h in b.trace] == [h.queries for h in s.trace]
        assert [[r.id for r in rows] for h in b.trace for rows in h.hits] == [
            [r.id for r in rows] for h in s.trace for rows in h.hits
        ]
    assert batch[1].chunk_ids == ["omega", "carla"]
    # One Labeler call per hop for the whole batch.
    assert len(rag.labeler.calls) == 3


def test_trace_is_complete(corpus):
    rag, _ = make(corpus, top_k=2)
    res = rag.retrieve(Q1)
    for hop in (h.to_dict() for h in res.trace):
        assert set(hop) >= {"hop", "queries", "hits", "next_queries", "timings_s"}
        assert set(hop["timings_s"]) == {"retrieval", "labeler", "filter"}
        for rows in hop["hits"]:
            for row in rows:
                assert {"id", "score", "seen"} <= set(row)
                if not row["seen"]:
                    assert row["tag"] in {"continue", "terminate"} and "labeled_words" in row
    first = {r.id: r for r in res.trace[0].hits[0]}
    assert first["alpha"].labeled_words == ["Bob", "Stone"]


def test_trace_splits_retrieval_time_when_the_backend_reports_it(corpus):
    class TimedRetriever(WordOverlapRetriever):
        def search(self, queries, k):
            self.last_timings = {"encode": 0.25 * len(queries), "search": 0.5 * len(queries)}
            return super().search(queries, k)

    rag = EfficientRAG(
        TimedRetriever(corpus, STOP), ScriptedLabeler(USEFUL), InfoOnlyFilter(), EfficientRAGConfig(top_k=2)
    )
    # Two questions share each batched search: each is charged its share of the call.
    for res in rag.retrieve_batch([Q1, Q2]):
        for hop in res.trace:
            assert set(hop.timings_s) == {"retrieval", "encode", "search", "labeler", "filter"}
            assert hop.timings_s["encode"] == pytest.approx(0.25)
            assert hop.timings_s["search"] == pytest.approx(0.5)


def test_trace_renders_every_hop(corpus):
    from efficientrag.pipeline.trace_format import format_result

    rag, _ = make(corpus, top_k=2)
    text = format_result(rag.retrieve(Q1))
    assert "Hop 1" in text and "Hop 3" in text
    assert "next query: Bob Stone" in text and "labeled: Bob Stone" in text
    assert "Kept 2 chunks" in text and "[bob]" in text


def test_floor_keeps_the_questions_top_hits_and_only_adds(corpus):
    rag, retriever = make(corpus, top_k=3, max_hops=1, floor_k=3)
    direct = [h.id for h in retriever.search([Q1], 3)[0]]
    res = rag.retrieve(Q1)
    # One hop, and only alpha says Continue: without the floor the result would be alpha alone.
    assert set(direct) <= set(res.chunk_ids) and len(res.chunk_ids) == 3
    assert all(r.floor for r in res.trace[0].hits[0])
    plain, _ = make(corpus, top_k=3, max_hops=1)
    assert plain.retrieve(Q1).chunk_ids == ["alpha"]


def test_floor_chunks_tagged_terminate_are_judged_again_and_open_their_branch(corpus):
    # The question retrieves bob at top-3 (tagged Terminate: the question does not name Bob); the
    # floor keeps it, and the next-hop query "Bob Stone" must still relabel it and go on to Paris.
    rag, _ = make(corpus, top_k=3, max_hops=4, floor_k=3)
    res = rag.retrieve(Q1)
    assert "bob" in res.chunk_ids
    assert [h.queries for h in res.trace][:3] == [[Q1], ["Bob Stone"], ["Paris"]]
    hop1 = {r.id: r for r in res.trace[1].hits[0]}
    assert hop1["bob"].seen is False and hop1["bob"].tag == "continue"
    assert hop1["alpha"].seen is True  # a floor chunk tagged Continue is not labeled again


def test_best_budget_keeps_the_most_probable_chunks_and_lets_the_loop_run(corpus):
    retriever = WordOverlapRetriever(corpus, STOP)
    labeler = ScriptedLabeler(USEFUL, confidence={"Alpha": 0.6, "Bob": 0.9})
    first = EfficientRAG(retriever, labeler, InfoOnlyFilter(), EfficientRAGConfig(top_k=2, chunk_budget=1))
    res = first.retrieve(Q1)
    assert res.chunk_ids == ["alpha"] and len(res.trace) == 1  # "first": full after hop 0, stops
    best = EfficientRAG(
        retriever,
        labeler,
        InfoOnlyFilter(),
        EfficientRAGConfig(top_k=2, chunk_budget=1, budget_policy="best"),
    )
    res = best.retrieve(Q1)
    assert res.chunk_ids == ["bob"] and res.scores == [0.9]
    assert len(res.trace) == 3  # the loop ran to its natural end before trimming


def test_a_wider_first_hop_searches_the_question_deeper_and_later_hops_at_top_k(corpus):
    # The question's top 1 is alpha alone; at top 3 the first hop also labels bob and carla there.
    retriever = WordOverlapRetriever(corpus, STOP)
    searched = []
    search = retriever.search
    retriever.search = lambda queries, k: searched.append(k) or search(queries, k)
    labeler = ScriptedLabeler(USEFUL)
    cfg = EfficientRAGConfig(top_k=1, first_top_k=3, max_hops=3, floor_k=3)
    res = EfficientRAG(retriever, labeler, InfoOnlyFilter(), cfg).retrieve(Q1)
    assert searched[0] == 3 and set(searched[1:]) == {1}
    assert len(res.trace[0].hits[0]) == 3 and all(len(h) <= 1 for hop in res.trace[1:] for h in hop.hits)
    assert (
        EfficientRAGConfig(top_k=2, first_top_k=5).first_hop_k == 5
        and EfficientRAGConfig(top_k=2).first_hop_k == 2
    )
    with pytest.raises(
        ValueError, match=r"floor_k \(4\) cannot exceed the first hop's hits \(first_top_k=3\)"
    ):
        EfficientRAGConfig(top_k=10, first_top_k=3, floor_k=4)
    with pytest.raises(ValueError, match="first_top_k must be >= 1"):
        EfficientRAGConfig(first_top_k=0)


def test_best_budget_puts_floor_chunks_first(corpus):
    retriever = WordOverlapRetriever(corpus, STOP)
    labeler = ScriptedLabeler(USEFUL, confidence={"Alpha": 0.6, "Bob": 0.9})
    cfg = EfficientRAGConfig(top_k=1, chunk_budget=1, budget_policy="best", floor_k=1)
    res = EfficientRAG(retriever, labeler, InfoOnlyFilter(), cfg).retrieve(Q1)
    assert res.chunk_ids == ["alpha"]  # the floor (question's top-1) wins over the likelier bob


@pytest.mark.parametrize("budget", [2, 3])
def test_fill_budget_tops_up_with_the_questions_next_ranked_hits(corpus, budget):
    rag, retriever = make(
        corpus, top_k=3, max_hops=1, chunk_budget=budget, budget_policy="best", fill_budget=True
    )
    direct = [h.id for h in retriever.search([Q1], 3)[0]]
    res = rag.retrieve(Q1)
    # One hop keeps alpha alone; the unspent budget goes to the question's best other hits, in rank order.
    assert res.chunk_ids == ["alpha", *[d for d in direct if d != "alpha"][: budget - 1]]
    assert res.counters["filled"] == budget - 1
    assert all(0.0 <= p <= 1.0 for p in res.scores)
    plain, _ = make(corpus, top_k=3, max_hops=1, chunk_budget=budget, budget_policy="best")
    assert plain.retrieve(Q1).chunk_ids == ["alpha"]


def test_fill_budget_adds_nothing_when_the_loop_spends_the_budget(corpus):
    rag, _ = make(corpus, top_k=2, max_hops=4, chunk_budget=2, budget_policy="best", fill_budget=True)
    res = rag.retrieve(Q1)
    assert res.chunk_ids == ["alpha", "bob"] and "filled" not in res.counters


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"fill_budget": True}, "fill_budget needs a chunk_budget"),
        ({"budget_policy": "most"}, "budget_policy"),
        ({"floor_k": -1}, "floor_k"),
        ({"floor_k": 4, "chunk_budget": 3}, "chunk_budget"),
        ({"floor_k": 11, "top_k": 10}, r"cannot exceed the first hop's hits \(top_k=10\)"),
    ],
)
def test_bad_loop_settings_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        EfficientRAGConfig(**kw)
