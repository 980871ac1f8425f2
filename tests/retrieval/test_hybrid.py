"""Dense + BM25 reciprocal-rank fusion: fused scores by hand, persistence through the factory."""

from __future__ import annotations

import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.retrieval import RetrieverConfig, build_retriever, load_retriever
from efficientrag.retrieval.base import Hit
from efficientrag.retrieval.hybrid import HybridRetriever


class _Ranked:
    """A retriever that returns a fixed ranking per query (scores on its own scale)."""

    def __init__(self, corpus: Corpus, rankings: dict[str, list[str]], scale: float) -> None:
        self.corpus, self.rankings, self.scale = corpus, rankings, scale
        self.depths: list[int] = []

    def search(self, queries, k):
        self.depths.append(k)
        return [
            [Hit(self.corpus.get(cid), self.scale / (i + 1)) for i, cid in enumerate(self.rankings[q][:k])]
            for q in queries
        ]


def _corpus(n: int = 5) -> Corpus:
    return Corpus(Chunk(f"c{i}", f"T{i}", f"text {i}") for i in range(n))


def test_rrf_scores_and_order_by_hand():
    corpus = _corpus()
    dense = _Ranked(corpus, {"q": ["c0", "c1", "c2"]}, scale=0.9)
    bm25 = _Ranked(corpus, {"q": ["c2", "c3", "c0"]}, scale=25.0)
    hybrid = HybridRetriever([dense, bm25], rrf_k=60, depth=3)
    (hits,) = hybrid.search(["q"], 4)
    expected = {
        "c0": 1 / 61 + 1 / 63,
        "c2": 1 / 63 + 1 / 61,
        "c1": 1 / 62,
        "c3": 1 / 62,
    }
    assert [h.id for h in hits] == ["c0", "c2", "c1", "c3"]  # equal scores: id order
    for h in hits:
        assert h.score == pytest.approx(expected[h.id])
    assert dense.depths == [4] and bm25.depths == [4]  # depth is raised to k


def test_weights_and_depth_at_least_k():
    corpus = _corpus()
    dense = _Ranked(corpus, {"q": ["c0", "c1", "c2", "c3"]}, scale=1.0)
    bm25 = _Ranked(corpus, {"q": ["c3", "c2", "c1", "c0"]}, scale=1.0)
    (hits,) = HybridRetriever([dense, bm25], rrf_k=0, depth=2, weights=[0.0, 1.0]).search(["q"], 3)
    assert [h.id for h in hits] == ["c3", "c2", "c1"]  # only BM25 counts; depth raised to k
    assert bm25.depths == [3]


def test_bad_settings_are_refused():
    corpus = _corpus()
    one = _Ranked(corpus, {}, 1.0)
    with pytest.raises(ValueError, match="at least two"):
        HybridRetriever([one])
    with pytest.raises(ValueError, match="weight"):
        HybridRetriever([one, one], weights=[1.0])
    with pytest.raises(ValueError, match="different sizes"):
        HybridRetriever([one, _Ranked(_corpus(3), {}, 1.0)])
    with pytest.raises(ValueError, match="hybrid_weights"):
        RetrieverConfig(kind="hybrid", hybrid_weights=[1.0, -1.0])


def test_factory_builds_saves_and_loads_both_halves(tmp_path, minilm_path):
    texts = [
        "Alaric Vantmoor was born in Quellbridge.",
        "Quellbridge is a harbour town on the northern coast.",
        "Brenna Osric painted the harbour of Quellbridge.",
        "The violin concerto was written in 1901.",
    ]
    corpus = Corpus(Chunk(f"d{i}", "", t) for i, t in enumerate(texts))
    cfg = RetrieverConfig(kind="hybrid", encoder=minilm_path, stopwords=None, bm25_stemmer="none")
    built = build_retriever(cfg, corpus, tmp_path / "index", show_progress=False)
    assert (tmp_path / "index" / "dense").is_dir() and (tmp_path / "index" / "bm25").is_dir()
    loaded = load_retriever(cfg, corpus, tmp_path / "index", show_progress=False)
    queries = ["Where was Alaric Vantmoor born?", "who painted the harbour"]
    a, b = built.search(queries, 3), loaded.search(queries, 3)
    assert [[h.id for h in hits] for hits in a] == [[h.id for h in hits] for hits in b]
    assert a[0][0].id == "d0"
    assert set(loaded.last_timings) == {"encode", "search"}
