"""A left-out corpus's reranker chosen on the pseudo-validation questions mined from it: every row
read from one scoring of the top hits, in the order the real reranker returns, the search's own
order a candidate, the scores cached against their inputs."""

import pytest

from efficientrag.baselines.rerank import Rerank, RerankConfig
from efficientrag.data.schema import Example
from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever

BENCHMARK = "rerank_pseudo"  # the conftest fixture `bench` imports it

# A score per chunk that reverses much of the word-overlap search's order.
TITLE_SCORES = {"noise": 5.0, "carla": 4.0, "paris": 3.0, "alpha": 2.0, "omega": 1.0, "bob": 0.5}


class Scorer:
    def __init__(self):
        self.pairs = 0

    def score_of(self, chunk):
        self.pairs += 1
        return TITLE_SCORES[chunk.id]


class FakeRerank(Rerank):
    def load_scorer(self):
        return Scorer()

    def score(self, pairs):
        return [self.scorer.score_of(chunk) for _, chunk in pairs]


@pytest.mark.parametrize("n", [2, 4, 6])
@pytest.mark.parametrize("fusion", ["none", "rrf"])
def test_a_row_read_from_the_wide_scoring_is_the_rerankers_own_list(bench, n, fusion):
    retriever = WordOverlapRetriever(bridge_corpus())
    questions = [ALPHA_QUESTION, OMEGA_QUESTION]
    method = FakeRerank(retriever, None, RerankConfig(top_n=n, fusion=fusion, rrf_k=1))
    method.setup()
    preds = method.run_batch([Example(f"q{i}", q, [], []) for i, q in enumerate(questions)])
    wide = retriever.search(questions, 6)
    for pred, hits in zip(preds, wide, strict=True):
        ids, scores = [h.id for h in hits], [TITLE_SCORES[h.id] for h in hits]
        assert bench.row_order(ids, scores, n, fusion, rrf_k=1) == [c.id for c in pred.chunks]


def test_rows_are_scored_at_k_from_their_own_top_n(bench):
    assert bench.FUSION_K == 6 and bench.NS == (20, 50)
    # 50 hits, gold c1 and c30; the scorer puts c30 first, then the search's order.
    ids = [f"c{i}" for i in range(50)]
    scores = [-float(i) for i in range(50)]
    scores[30] = 1.0
    gold = [["c1", "c30"]]
    assert bench.row_scores(gold, [ids], None) == {bench.SEARCH_ROW: {"none": 25.0}}
    # N=20 never sees c30: c1 alone (recall 1/2, all-gold 0). N=50 alone puts c30 first (both found);
    # fused with the search's order it falls to 13th (1/91 + 1/61 is below c11's 1/72 + 1/73).
    assert bench.row_scores(gold, [ids], [scores]) == {
        "N=20": {"none": 25.0, "rrf": 25.0},
        "N=50": {"none": 100.0, "rrf": 25.0},
    }


def test_the_search_is_chosen_only_where_no_reranker_beats_it(bench):
    search = bench.SEARCH_ROW
    mean = {"rerank N=20": {"none": 40.0, "rrf": 52.0}, "Labeler rerank N=20": {"none": 52.0, "rrf": 51.0}}
    assert bench.choose_on_pseudo({**mean, search: {"none": 50.0}}) == ("rerank N=20", "rrf")
    assert bench.choose_on_pseudo({**mean, search: {"none": 52.0}}) == ("rerank N=20", "rrf")
    assert bench.choose_on_pseudo({**mean, search: {"none": 52.5}}) == (search, "none")


def test_each_question_kind_weighs_half(bench):
    result = {
        "n": {"pseudo-validation": 100, "pseudo-single": 10},
        "scores": {
            "pseudo-validation": {"r": {"none": 40.0, "rrf": 60.0}},
            "pseudo-single": {"r": {"none": 80.0, "rrf": 70.0}},
        },
    }
    assert bench.pseudo_mean(result) == {"r": {"none": 60.0, "rrf": 65.0}}


@pytest.fixture
def mined(bench, monkeypatch):
    """The corpus's pseudo questions, the models' digests and the rerankers replaced by fakes over
    the bridge corpus; returns the models' digests (change one to change the inputs) and the
    scorers built."""
    import efficientrag.experiment.assembly as assembly

    questions = [
        Example("pseudo/a", ALPHA_QUESTION, ["Paris"], ["alpha", "bob"], type="pseudo"),
        Example("pseudo/a/single", "Where was Bob born?", ["Paris"], ["bob"], type="pseudo-single"),
    ]
    digests = {"labeler": "L1", "reranker": "R1"}
    built = []

    def rerankers(pool, models, reranker, only):
        assert sorted(only) == sorted(bench.SCORERS.values())
        methods = {row: (FakeRerank(pool.retriever, None, RerankConfig(top_n=50)), row) for row in only}
        built.extend(m for m, _ in methods.values())
        return methods

    monkeypatch.setattr(bench, "pseudo_examples", lambda pool: questions)
    monkeypatch.setattr(bench, "rerankers", rerankers)
    monkeypatch.setattr(assembly, "model_digest", lambda kind, path: digests[kind])
    return digests, built


def test_scores_are_cached_and_made_again_when_a_model_changes(bench, mined, tmp_path):
    digests, built = mined
    pool = type("Pool", (), {"retriever": WordOverlapRetriever(bridge_corpus())})()
    first = bench.pseudo_scores(pool, tmp_path, tmp_path / "ce", tmp_path / "cache", progress=False)
    assert first["n"] == {"pseudo-validation": 1, "pseudo-single": 1}
    assert set(first["scores"]["pseudo-single"]) == {
        bench.SEARCH_ROW,
        "rerank N=20",
        "rerank N=50",
        "Labeler rerank N=20",
        "Labeler rerank N=50",
    }
    # Both scorers read each question's hits once (six chunks, two questions), for all four rows.
    assert [m.scorer.pairs for m in built] == [12, 12]
    assert bench.pseudo_scores(pool, tmp_path, tmp_path / "ce", tmp_path / "cache", progress=False) == first
    assert len(built) == 2  # read back, nothing scored
    digests["reranker"] = "R2"
    assert bench.pseudo_scores(pool, tmp_path, tmp_path / "ce", tmp_path / "cache", progress=False) == first
    assert len(built) == 4  # another reranker: scored again
