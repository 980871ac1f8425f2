"""``budget_policy="rerank"``: the loop contains its Labeler as a reranker. With ``floor_k=0`` its
first hop alone gives ``labeler_rerank``'s top ``chunk_budget`` of the question's ``first_top_k``
hits, and a chunk a later hop judges takes a place only from a kept chunk it outscores (on the scale
``hop_calibration`` puts every hop on). ``pair_budget`` bounds the Labeler pairs per question."""

from __future__ import annotations

import hashlib
import random

import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.pipeline.calibration import calibrate
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    CONFIDENCE,
    STOPWORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    ScriptedPrediction,
    bridge_corpus,
)
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.word_overlap import WordOverlapRetriever
from efficientrag.text.words import split_words

REJECTED = {"Omega": 0.2, "Bob": 0.1, "Paris": 0.3, "Noise": 0.05, "Carla": 0.15}


def bridge_loop(**cfg) -> EfficientRAG:
    settings = {"top_k": 3, "max_hops": 4, "budget_policy": "rerank", **cfg}
    return EfficientRAG(
        WordOverlapRetriever(bridge_corpus(), STOPWORDS),
        ScriptedLabeler(USEFUL, CONFIDENCE, rejected=REJECTED),
        InfoOnlyFilter(),
        EfficientRAGConfig(**settings),
    )


def test_a_later_hop_chunk_enters_only_by_outscoring_the_lowest_kept_one():
    # The question's hits: alpha (0.9, Continue), bob (0.1: the question does not name Bob), omega
    # (0.2). The Labeler as a reranker keeps alpha and omega. The second hop's query names Bob Stone:
    # bob is judged again at 0.7 and takes omega's place. Paris, found by the same query and tagged
    # Terminate at 0.3, still outscores omega for a third place.
    res = bridge_loop(chunk_budget=2).retrieve(ALPHA_QUESTION)
    assert [[r.id for r in h.hits[0]] for h in res.trace[:2]] == [
        ["alpha", "bob", "omega"],
        ["alpha", "bob", "paris"],
    ]
    assert res.chunk_ids == ["alpha", "bob"] and res.scores == pytest.approx([0.9, 0.7])
    assert bridge_loop(chunk_budget=3).retrieve(ALPHA_QUESTION).chunk_ids == ["alpha", "bob", "paris"]
    assert bridge_loop(chunk_budget=4).retrieve(ALPHA_QUESTION).chunk_ids == [
        "alpha",
        "bob",
        "paris",
        "omega",
    ]
    # A later hop's probabilities calibrated down (hop 1+: sigmoid(logit(p) - 3)): bob's 0.7 is worth
    # 0.10 there, under omega's first-hop 0.2, so the reranker's two stay.
    calibrated = bridge_loop(chunk_budget=2, hop_calibration=[[1.0, 0.0], [1.0, -3.0]])
    assert calibrated.retrieve(ALPHA_QUESTION).chunk_ids == ["alpha", "omega"]
    assert calibrate(0.7, 1, [[1.0, 0.0], [1.0, -3.0]]) < 0.2 < calibrate(0.2, 0, [[1.0, 0.0]]) + 1e-9


def test_the_floor_still_comes_first():
    res = bridge_loop(chunk_budget=2, floor_k=2).retrieve(ALPHA_QUESTION)
    assert res.chunk_ids == ["alpha", "bob"]  # bob by the floor, with its best probability (0.7)
    res = bridge_loop(chunk_budget=2, floor_k=1, hop_calibration=[[1.0, 0.0], [1.0, -3.0]]).retrieve(
        ALPHA_QUESTION
    )
    assert res.chunk_ids == ["alpha", "omega"]


class HashedLabeler:
    """A Labeler with a fixed pseudo-random Continue probability per (query, chunk) pair; it marks a
    chunk's first two words useful, so every Continue chunk gives the Filter a next query."""

    def __init__(self) -> None:
        self.pairs = 0

    @staticmethod
    def prob(query_words: list[str], chunk_words: list[str]) -> float:
        digest = hashlib.sha256(" ".join([*query_words, "|", *chunk_words]).encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32

    def predict(self, pairs, **kw):
        self.pairs += len(pairs)
        return [
            ScriptedPrediction(self.prob(q, c), [1.0 if i < 2 else 0.0 for i in range(len(c))])
            for q, c in pairs
        ]


def random_world(seed: int) -> tuple[Corpus, list[str]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)]
    chunks = [Chunk(f"c{i}", f"t{i}", " ".join(rng.sample(vocab, 6))) for i in range(60)]
    questions = [" ".join(rng.sample(vocab, 4)) + " ?" for _ in range(8)]
    return Corpus(chunks), questions


CALIBRATIONS = [
    None,
    [[1.0, 0.0], [1.0, -1.0]],
    [[2.0, 0.5], [0.5, 0.3], [1.0, 2.0]],
    [[1.0, 0.0, -0.8], [0.5, 0.2, -0.3]],
]


@pytest.mark.parametrize("calibration", CALIBRATIONS, ids=["raw", "later-down", "mixed", "with-rank"])
@pytest.mark.parametrize("seed", range(6))
def test_no_later_hop_pushes_out_a_first_hop_chunk_that_scores_higher(seed, calibration):
    """Against the Labeler as a reranker computed here on its own (the question's top 12 hits,
    sorted by their calibrated first-hop score, ties by rank: the probability itself without
    calibration, fused with the search's rank with a third coefficient), at equal chunks: each of
    the reranker's chunks the loop left out was outscored by every chunk that took a place, and no
    judged chunk left out scores above a kept one."""
    corpus, questions = random_world(seed)
    retriever, budget = WordOverlapRetriever(corpus), 5
    cfg = EfficientRAGConfig(
        top_k=4,
        first_top_k=12,
        max_hops=3,
        tag_threshold=0.6,
        chunk_budget=budget,
        budget_policy="rerank",
        query_mode="branch",
        hop_calibration=calibration,
    )
    labeler = HashedLabeler()
    results = EfficientRAG(retriever, labeler, InfoOnlyFilter(), cfg).retrieve_batch(questions)
    cal = calibration or [[1.0, 0.0]]
    for question, res, hits in zip(questions, results, retriever.search(questions, 12), strict=True):
        q_words = split_words(question)
        first = {
            h.id: calibrate(HashedLabeler.prob(q_words, split_words(h.chunk.contents)), 0, cal, rank)
            for rank, h in enumerate(hits)
        }
        ranked = sorted(first, key=lambda cid: -first[cid])  # stable: ties keep the search's order
        reranker = ranked[:budget]
        assert len(res.chunk_ids) == budget

        def score(cid: str, res=res) -> float:
            return max(
                calibrate(p.continue_prob, hop.hop, cal, rank)
                for hop in res.trace
                for rows in hop.hits
                for rank, p in enumerate(rows)
                if p.id == cid and p.continue_prob is not None
            )

        scores = [score(c) for c in res.chunk_ids]
        assert scores == sorted(scores, reverse=True)
        # A chunk of the reranker's is left out only for chunks that outscore it; its own score is
        # at least its first-hop one (a later query may judge it higher).
        entered = [c for c in res.chunk_ids if c not in reranker]
        for out in set(reranker) - set(res.chunk_ids):
            assert score(out) >= first[out] - 1e-12
            assert entered and all(score(c) > score(out) for c in entered), (question, out, entered)
        # Every judged chunk left out scores at most the lowest kept one.
        judged = {p.id for hop in res.trace for rows in hop.hits for p in rows if p.continue_prob is not None}
        lowest = min(score(c) for c in res.chunk_ids)
        assert all(score(c) <= lowest for c in judged - set(res.chunk_ids))


def test_pair_budget_bounds_the_labeler_pairs_and_never_cuts_the_first_hop():
    corpus, questions = random_world(3)
    cfg = {"top_k": 4, "first_top_k": 10, "max_hops": 4, "tag_threshold": 0.3, "query_mode": "branch"}
    free = EfficientRAG(
        WordOverlapRetriever(corpus), HashedLabeler(), InfoOnlyFilter(), EfficientRAGConfig(**cfg)
    )
    unbounded = free.retrieve_batch(questions)
    assert max(r.counters["labeler_pairs"] for r in unbounded) > 13  # so the bound below binds
    labeler = HashedLabeler()
    rag = EfficientRAG(
        WordOverlapRetriever(corpus), labeler, InfoOnlyFilter(), EfficientRAGConfig(**cfg, pair_budget=13)
    )
    results = rag.retrieve_batch(questions)
    assert labeler.pairs == sum(r.counters["labeler_pairs"] for r in results)
    for res, free_res in zip(results, unbounded, strict=True):
        assert res.counters["labeler_pairs"] <= 13
        first = res.trace[0].hits[0]
        assert len(first) == 10 and all(h.continue_prob is not None for h in first)
        cut = [h for hop in res.trace for rows in hop.hits for h in rows if h.unjudged]
        if free_res.counters["labeler_pairs"] > 13:
            assert res.counters["labeler_pairs"] == 13 and cut
            assert all(h.to_dict()["unjudged"] is True and h.continue_prob is None for h in cut)
        else:
            assert res.chunk_ids == free_res.chunk_ids and not cut


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"budget_policy": "rerank"}, "set a chunk_budget"),
        ({"budget_policy": "rerank", "chunk_budget": 3, "fill_budget": True}, "drop fill_budget"),
        ({"pair_budget": 5, "top_k": 6}, r"pair_budget \(5\) must cover the first hop's 6 pairs"),
        ({"pair_budget": 12, "first_top_k": 20}, "first hop's 20 pairs"),
        ({"hop_calibration": [[1.0, 0.0]]}, "hop_calibration only applies"),
        ({"chunk_budget": 3, "budget_policy": "rerank", "hop_calibration": []}, "one \\[a, b\\] or"),
        ({"chunk_budget": 3, "budget_policy": "rerank", "hop_calibration": [[0.0, 1.0]]}, "a > 0"),
        ({"chunk_budget": 3, "budget_policy": "best", "hop_calibration": [[1.0, 0.0], [1.0]]}, r"\[1\]"),
        ({"chunk_budget": 3, "budget_policy": "best", "hop_calibration": [[1.0, 0.0, 1.0, 2.0]]}, r"\[0\]"),
    ],
)
def test_bad_settings_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        EfficientRAGConfig(**kw)


@pytest.mark.parametrize("mode", ["merged", "branch"])
def test_the_wide_first_hop_is_judged_for_the_budget_only(mode):
    """The hops of a rerank loop with first_top_k=12 are the hops of the same loop at top_k=4: its
    extra first-hop judgements only add candidates."""
    corpus, questions = random_world(5)
    cfg = {"top_k": 4, "max_hops": 3, "tag_threshold": 0.5, "query_mode": mode}
    plain = EfficientRAG(
        WordOverlapRetriever(corpus), HashedLabeler(), InfoOnlyFilter(), EfficientRAGConfig(**cfg)
    )
    wide = EfficientRAG(
        WordOverlapRetriever(corpus),
        HashedLabeler(),
        InfoOnlyFilter(),
        EfficientRAGConfig(**cfg, first_top_k=12, chunk_budget=6, budget_policy="rerank"),
    )
    widened = 0
    for a, b in zip(plain.retrieve_batch(questions), wide.retrieve_batch(questions), strict=True):
        assert [h.queries for h in b.trace] == [h.queries for h in a.trace]
        assert [h.next_queries for h in b.trace] == [h.next_queries for h in a.trace]
        assert len(b.trace[0].hits[0]) == 12 and len(a.trace[0].hits[0]) == 4
        widened += any(r.continued for r in b.trace[0].hits[0][4:])
    assert widened  # some hit past top_k said Continue, and still opened no branch
