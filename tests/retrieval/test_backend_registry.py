"""A new search backend is one module and one registration: ``retriever.kind`` then accepts it, and
the index, the commands' search and the report find it in the registry."""

from __future__ import annotations

import pytest

from efficientrag.config import load_config
from efficientrag.errors import ConfigError
from efficientrag.eval.report import _retriever_desc
from efficientrag.experiment.assembly import search_backend
from efficientrag.experiment.config import ExperimentConfig, index_name
from efficientrag.retrieval import factory
from efficientrag.retrieval.config import SEARCH_KINDS, RetrieverConfig
from efficientrag.testing.scripted_models import STOPWORDS, bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever


def _overlap(cfg, corpus, index_dir, **_):
    return WordOverlapRetriever(corpus, STOPWORDS)


@pytest.fixture()
def overlap(monkeypatch):
    monkeypatch.setattr(factory, "BACKENDS", dict(factory.BACKENDS))
    monkeypatch.setattr("efficientrag.retrieval.config.SEARCH_KINDS", set(SEARCH_KINDS))
    import efficientrag.retrieval.config as config_module

    monkeypatch.setattr(factory, "SEARCH_KINDS", config_module.SEARCH_KINDS)
    backend = factory.SearchBackend(
        "overlap", _overlap, _overlap, lambda cfg: "overlap", lambda c: "retriever word overlap"
    )
    factory.register_backend(backend)
    return backend


def test_the_built_in_kinds_are_the_registrys():
    assert set(factory.BACKENDS) == SEARCH_KINDS == {"dense", "bm25", "hybrid", "milvus"}
    assert [k for k, b in factory.BACKENDS.items() if b.holds_chunks] == ["milvus"]
    assert index_name(RetrieverConfig(kind="bm25")) == "bm25"
    assert index_name(RetrieverConfig(kind="hybrid")) == "hybrid-dense-all-MiniLM-L6-v2-flat-bm25"


def test_an_unregistered_kind_is_refused_naming_the_registered_ones():
    with pytest.raises(
        ConfigError, match=r"registered search backend \(bm25, dense, hybrid, milvus\), got 'overlap'"
    ):
        load_config(ExperimentConfig, None, ["retriever.kind=overlap"])
    with pytest.raises(ValueError, match="'overlap' is not a registered search backend"):
        factory.backend_of("overlap")


def test_a_registered_backend_is_found_by_the_config_the_index_the_search_and_the_report(overlap, tmp_path):
    cfg = load_config(ExperimentConfig, None, ["retriever.kind=overlap", f"work_dir={tmp_path}"])
    assert cfg.index_dir == tmp_path / "index" / "overlap"
    corpus = bridge_corpus()
    retriever = search_backend(cfg, corpus)
    assert isinstance(retriever, WordOverlapRetriever)
    assert factory.build_retriever(cfg.retriever, corpus).search(["Alpha"], 1)[0][0].id == "alpha"
    assert _retriever_desc({"retriever": {"kind": "overlap"}}) == "retriever word overlap"
    with pytest.raises(ValueError, match="already registered"):
        factory.register_backend(overlap)
