"""BM25 (bm25s in-process): scores checked against the formula by hand, persistence, checks."""

from __future__ import annotations

import json
import math
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.retrieval import (
    BM25Retriever,
    IndexMismatchError,
    IndexNotFoundError,
    Retriever,
    RetrieverConfig,
    build_retriever,
    load_retriever,
)
from efficientrag.retrieval.bm25 import resolve_stemmer, top_k_rows

K1, B = 1.2, 0.75
PLAIN = RetrieverConfig(kind="bm25", bm25_k1=K1, bm25_b=B, stopwords=None, bm25_stemmer="none")
DOCS = ["apple banana apple", "banana cherry", "cherry date elderberry fig", "grape"]


def make_corpus(texts: list[str]) -> Corpus:
    return Corpus(Chunk(f"d{i}", "", t) for i, t in enumerate(texts))


def lucene(tf: int, doc_len: int, df: int, n_docs: int, avg_len: float) -> float:
    """One term's BM25 (Lucene variant: no (k1+1) factor, idf with +1 inside the log)."""
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + K1 * (1 - B + B * doc_len / avg_len))


@pytest.fixture(scope="module")
def plain() -> BM25Retriever:
    return BM25Retriever.build(make_corpus(DOCS), PLAIN, show_progress=False)


def test_scores_match_the_formula(plain):
    assert isinstance(plain, Retriever)
    avg = (3 + 2 + 4 + 1) / 4
    hits = plain.search(["apple", "banana cherry"], 4)
    assert [h.id for h in hits[0]] == ["d0"]
    assert hits[0][0].score == pytest.approx(lucene(2, 3, 1, 4, avg), rel=1e-5)
    # d1 holds both terms; d0 and d2 one each with equal idf, and the shorter d0 wins.
    assert [h.id for h in hits[1]] == ["d1", "d0", "d2"]
    expected = [
        lucene(1, 2, 2, 4, avg) * 2,
        lucene(1, 3, 2, 4, avg),
        lucene(1, 4, 2, 4, avg),
    ]
    np.testing.assert_allclose([h.score for h in hits[1]], expected, rtol=1e-5)


def test_only_matching_chunks_are_hits(plain):
    hits = plain.search(["banana", "zucchini", "", "  "], 10)
    assert [h.id for h in hits[0]] == ["d1", "d0"]  # the shorter document first
    assert hits[1] == hits[2] == hits[3] == []
    assert plain.search(["banana"], 0) == [[]]
    assert plain.search([], 3) == []


def test_ties_are_broken_by_corpus_order():
    retriever = BM25Retriever.build(
        make_corpus(["kiwi lime", "mango", "kiwi lime", "kiwi lime"]), PLAIN, show_progress=False
    )
    assert [h.id for h in retriever.search(["kiwi"], 10)[0]] == ["d0", "d2", "d3"]
    assert [h.id for h in retriever.search(["kiwi"], 2)[0]] == ["d0", "d2"]


def test_top_k_rows():
    scores = np.array([0.0, 3.0, 1.0, 3.0, 2.0, 0.0], dtype=np.float32)
    assert top_k_rows(scores, 3) == [1, 3, 4]
    assert top_k_rows(scores, 1) == [1]
    assert top_k_rows(scores, 100) == [1, 3, 4, 2]
    assert top_k_rows(scores, 0) == []


def test_stopwords_are_not_matched():
    corpus = make_corpus(["the history of the city", "a city of bridges"])
    retriever = BM25Retriever.build(
        corpus, RetrieverConfig(kind="bm25", bm25_stemmer="none"), show_progress=False
    )
    assert retriever.search(["the of a"], 5) == [[]]
    assert [h.id for h in retriever.search(["history of the bridges"], 5)[0]] == ["d0", "d1"]


def test_title_is_indexed_with_the_text():
    corpus = Corpus([Chunk("a", "Zanzibar", "An island."), Chunk("b", "Elsewhere", "Another island.")])
    retriever = BM25Retriever.build(corpus, PLAIN, show_progress=False)
    assert [h.id for h in retriever.search(["zanzibar"], 2)[0]] == ["a"]


def test_batch_search_equals_one_by_one(plain):
    queries = ["apple", "banana cherry", "fig grape", "cherry"]
    batched = plain.search(queries, 3)
    assert batched == [plain.search([q], 3)[0] for q in queries]


def test_bad_arguments_raise(plain):
    with pytest.raises(TypeError, match="list of queries"):
        plain.search("apple", 2)
    with pytest.raises(ValueError, match="k must be"):
        plain.search(["apple"], -2)
    with pytest.raises(TypeError, match="query 1"):
        plain.search(["apple", None], 2)


# --- persistence ------------------------------------------------------------------------------


@pytest.fixture()
def saved(tmp_path, plain) -> Path:
    plain.save(tmp_path / "bm25_index")
    return tmp_path / "bm25_index"


def test_save_load_round_trip_without_pickle(saved, plain, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("loading a BM25 index must not unpickle anything")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    loaded = BM25Retriever.load(saved, make_corpus(DOCS), PLAIN)
    queries = ["apple", "banana cherry", "date fig grape"]
    assert loaded.search(queries, 4) == plain.search(queries, 4)
    for npy in (saved / "bm25").glob("*.npy"):
        assert np.load(npy, allow_pickle=False).dtype != object
    meta = json.loads((saved / "meta.json").read_text())
    assert (meta["kind"], meta["k1"], meta["b"], meta["method"], meta["stopwords"], meta["stemmer"]) == (
        "bm25",
        K1,
        B,
        "lucene",
        None,
        None,
    )
    assert json.loads((saved / "ids.json").read_text()) == ["d0", "d1", "d2", "d3"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bm25_k1": 0.9}, "k1"),
        ({"bm25_b": 0.4}, "b"),
        ({"bm25_method": "robertson"}, "method"),
        ({"stopwords": "en"}, "stopwords"),
    ],
)
def test_other_settings_are_refused(saved, change, field):
    cfg = RetrieverConfig(**{**PLAIN.__dict__, **change})
    with pytest.raises(IndexMismatchError) as err:
        BM25Retriever.load(saved, make_corpus(DOCS), cfg)
    assert err.value.field == field
    assert "rebuild" in str(err.value)


def test_other_corpus_or_kind_is_refused(saved):
    with pytest.raises(IndexMismatchError) as err:
        BM25Retriever.load(saved, make_corpus([*DOCS[:3], "grapefruit"]), PLAIN)
    assert err.value.field == "corpus_fingerprint"
    meta = json.loads((saved / "meta.json").read_text())
    (saved / "meta.json").write_text(json.dumps({**meta, "kind": "dense"}))
    with pytest.raises(IndexMismatchError) as err:
        BM25Retriever.load(saved, make_corpus(DOCS), PLAIN)
    assert (err.value.field, err.value.saved, err.value.requested) == ("kind", "dense", "bm25")


def test_incomplete_index_is_reported(saved):
    (saved / "meta.json").unlink()
    with pytest.raises(IndexNotFoundError, match="meta.json"):
        load_retriever(PLAIN, make_corpus(DOCS), saved)
    (saved / "meta.json").write_text("{not json")
    with pytest.raises(IndexNotFoundError, match="not valid JSON"):
        load_retriever(PLAIN, make_corpus(DOCS), saved)


def test_factory_builds_once_then_loads(tmp_path):
    corpus = make_corpus(DOCS)
    first = build_retriever(PLAIN, corpus, tmp_path / "idx", show_progress=False)
    stamp = (tmp_path / "idx" / "meta.json").stat().st_mtime_ns
    second = build_retriever(PLAIN, corpus, tmp_path / "idx", show_progress=False)
    assert (tmp_path / "idx" / "meta.json").stat().st_mtime_ns == stamp
    assert isinstance(second, BM25Retriever)
    assert second.search(["cherry"], 3) == first.search(["cherry"], 3)
    other = RetrieverConfig(**{**PLAIN.__dict__, "bm25_k1": 2.0})
    with pytest.raises(IndexMismatchError):
        build_retriever(other, corpus, tmp_path / "idx")
    rebuilt = build_retriever(other, corpus, tmp_path / "idx", rebuild=True, show_progress=False)
    assert json.loads((tmp_path / "idx" / "meta.json").read_text())["k1"] == 2.0
    assert rebuilt.search(["cherry"], 3)[0][0].score != first.search(["cherry"], 3)[0][0].score


# --- stemming ---------------------------------------------------------------------------------


def test_stemmer_falls_back_when_pystemmer_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "Stemmer", None)
    assert resolve_stemmer("auto") == (None, None)
    assert resolve_stemmer("none") == (None, None)
    with pytest.raises(RuntimeError, match="pip install PyStemmer"):
        resolve_stemmer("english")


def test_stemming_matches_word_forms():
    pytest.importorskip("Stemmer")
    corpus = make_corpus(["she runs every morning", "a quiet evening walk"])
    retriever = BM25Retriever.build(
        corpus, RetrieverConfig(kind="bm25", bm25_stemmer="english"), show_progress=False
    )
    assert [h.id for h in retriever.search(["running"], 2)[0]] == ["d0"]
    assert retriever.meta["stemmer"] == "english"
    unstemmed = RetrieverConfig(kind="bm25", bm25_stemmer="none")
    assert BM25Retriever.build(corpus, unstemmed, show_progress=False).search(["running"], 2) == [[]]


def test_search_reports_encode_and_search_time(plain):
    plain.search(["apple", "cherry date"], 2)
    assert set(plain.last_timings) == {"encode", "search"}
    assert all(v >= 0 for v in plain.last_timings.values())
