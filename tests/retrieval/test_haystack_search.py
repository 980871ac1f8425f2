"""Haystack retrievers as the loop's search, with real Haystack objects built here: an
InMemoryDocumentStore embedded by the SentenceTransformers embedders at the packaged MiniLM gives the
same chunks as the package's own FAISS Flat index with that encoder, the in-memory BM25 retriever
steers the loop, and bad input is one line."""

from __future__ import annotations

import asyncio
import importlib
import sys

import pytest

pytest.importorskip("haystack", reason="needs the haystack extra")

from haystack import Document  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402

from efficientrag.pipeline.config import EfficientRAGConfig  # noqa: E402
from efficientrag.pipeline.efficientrag import EfficientRAG  # noqa: E402
from efficientrag.retrieval.config import RetrieverConfig  # noqa: E402
from efficientrag.retrieval.factory import build_retriever  # noqa: E402
from efficientrag.retrieval.framework import MissingChunkIdError  # noqa: E402
from efficientrag.retrieval.haystack_search import HaystackSearch  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)

QUERIES = [ALPHA_QUESTION, "Bob Stone", "", "Carla Moss"]


def haystack_docs(*, with_ids: bool = True) -> list[Document]:
    return [
        Document(id=c.id, content=c.contents, meta={"id": c.id, "title": c.title} if with_ids else {})
        for c in bridge_corpus()
    ]


@pytest.fixture(scope="module")
def st_embedders(minilm_path):
    st = pytest.importorskip("haystack_integrations.components.embedders.sentence_transformers")
    common = {
        "model": minilm_path,
        "normalize_embeddings": True,
        "local_files_only": True,
        "progress_bar": False,
    }
    return st.SentenceTransformersTextEmbedder(**common), st.SentenceTransformersDocumentEmbedder(**common)


@pytest.fixture(scope="module")
def embedded_store(st_embedders):
    _, doc_embedder = st_embedders
    doc_embedder.warm_up()
    store = InMemoryDocumentStore()
    store.write_documents(doc_embedder.run(haystack_docs())["documents"])
    return store


@pytest.fixture(scope="module")
def faiss(minilm_path):
    from efficientrag.retrieval.encoder import Encoder

    encoder = Encoder(minilm_path, show_progress=False)
    return build_retriever(RetrieverConfig(), bridge_corpus(), encoder=encoder, show_progress=False)


def bm25_store(*, with_ids: bool = True) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(haystack_docs(with_ids=with_ids))
    return store


def ids(results):
    return [[h.id for h in hits] for hits in results]


@pytest.mark.numerics
def test_in_memory_embedding_store_gives_faiss_flat_chunks_and_scores(st_embedders, embedded_store, faiss):
    text_embedder, _ = st_embedders
    search = HaystackSearch(InMemoryEmbeddingRetriever(embedded_store), text_embedder=text_embedder)
    got, want = search.search(QUERIES, 3), faiss.search(QUERIES, 3)
    assert ids(got) == ids(want)
    assert [h.score for h in got[1]] == pytest.approx([h.score for h in want[1]], abs=1e-4)
    assert got[0][0].chunk == bridge_corpus().get("alpha")  # title prefix removed from content
    # top_k is per call, whatever the retriever was built with (InMemoryEmbeddingRetriever: 10).
    assert [len(h) for h in search.search(QUERIES, 5)] == [5, 5, 0, 5]
    assert ids(asyncio.run(search.asearch(QUERIES, 3))) == ids(got)
    # The store itself with an embedder gets the in-memory embedding retriever.
    assert ids(HaystackSearch(embedded_store, text_embedder=text_embedder).search(QUERIES, 3)) == ids(got)


@pytest.mark.numerics
def test_efficientrag_on_a_haystack_store_equals_faiss(st_embedders, embedded_store, faiss):
    search = HaystackSearch(InMemoryEmbeddingRetriever(embedded_store), text_embedder=st_embedders[0])
    assert not hasattr(search, "corpus")
    cfg = EfficientRAGConfig(top_k=3, max_hops=3)
    runs = [
        EfficientRAG(r, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), cfg).retrieve_batch(
            [ALPHA_QUESTION, OMEGA_QUESTION]
        )
        for r in (faiss, search)
    ]
    assert [r.chunk_ids for r in runs[1]] == [r.chunk_ids for r in runs[0]]
    assert set(runs[1][0].chunk_ids) == {"alpha", "bob"}
    hop_hits = [[[h.id for h in hits] for hop in r.trace for hits in hop.hits] for r in runs[1]]
    assert hop_hits == [[[h.id for h in hits] for hop in r.trace for hits in hop.hits] for r in runs[0]]


def test_an_in_memory_store_alone_is_searched_with_bm25_and_steers_the_loop():
    search = HaystackSearch(bm25_store())
    assert type(search.retriever).__name__ == "InMemoryBM25Retriever"
    hits = search.search(["Bob Stone born", "Carla Moss"], 2)
    assert [h[0].id for h in hits] == ["bob", "carla"] and all(h.score > 0 for h in hits[0])
    rag = EfficientRAG(search, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), EfficientRAGConfig(top_k=3))
    assert set(rag.retrieve(ALPHA_QUESTION).chunk_ids) == {"alpha", "bob"}


def test_missing_id_is_one_line_and_id_key_none_uses_document_ids():
    search = HaystackSearch(bm25_store(with_ids=False))
    with pytest.raises(MissingChunkIdError) as info:
        search.search(["Bob Stone"], 2)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("Haystack result for query 'Bob Stone' has no metadata 'id' (its keys: [])")
    assert "set id_key" in message
    assert ids(HaystackSearch(bm25_store(with_ids=False), id_key=None).search(["Bob Stone"], 1)) == [["bob"]]


def test_wrong_objects_are_refused_at_construction(st_embedders, embedded_store):
    text_embedder, doc_embedder = st_embedders
    with pytest.raises(ValueError, match="searches by query_embedding; pass text_embedder="):
        HaystackSearch(InMemoryEmbeddingRetriever(embedded_store))
    with pytest.raises(TypeError, match="not a document embedder"):
        HaystackSearch(InMemoryEmbeddingRetriever(embedded_store), text_embedder=doc_embedder)
    with pytest.raises(ValueError, match="takes no text_embedder"):
        HaystackSearch(HaystackSearch(bm25_store()).retriever, text_embedder=text_embedder)
    with pytest.raises(TypeError, match="takes a Haystack retriever component.*got list"):
        HaystackSearch([])
    with pytest.raises(TypeError, match="takes neither query nor query_embedding"):
        HaystackSearch(text_embedder)


def test_missing_haystack_is_one_line_naming_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "haystack" or m.startswith("haystack.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "haystack", None)
    module = importlib.import_module("efficientrag.retrieval.haystack_search")
    with pytest.raises(ImportError) as info:
        module.HaystackSearch(object())
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("HaystackSearch needs haystack-ai (")
    assert str(info.value).endswith("pip install 'efficientrag[haystack]'")
