"""LangChain and LlamaIndex retrievers as the loop's search, with real framework objects built
here over the package's MiniLM encoder: a LangChain InMemoryVectorStore and a LlamaIndex
VectorStoreIndex give the same chunks as FAISS Flat, and EfficientRAG runs on them unchanged."""

from __future__ import annotations

import asyncio
import logging

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")

from efficientrag.retrieval.framework import LangChainSearch, LlamaIndexSearch, MissingChunkIdError  # noqa: E402
from efficientrag.retrieval.framework_embeddings import langchain_embeddings, llamaindex_embedding  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)

QUERIES = [ALPHA_QUESTION, "Bob Stone", "", "Carla Moss"]


def lc_store(encoder, *, with_ids=True):
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(langchain_embeddings(encoder))
    docs = [
        Document(
            id=c.id, page_content=c.contents, metadata={"id": c.id, "title": c.title} if with_ids else {}
        )
        for c in bridge_corpus()
    ]
    store.add_documents(docs)
    return store


@pytest.fixture(scope="module")
def llama_index(encoder):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    nodes = [
        TextNode(
            id_=c.id, text=c.contents, metadata={"id": c.id, "title": c.title},
            excluded_embed_metadata_keys=["id", "title"],
        )
        for c in bridge_corpus()
    ]  # fmt: skip
    return VectorStoreIndex(nodes, embed_model=llamaindex_embedding(encoder))


def ids(results):
    return [[h.id for h in hits] for hits in results]


@pytest.mark.numerics
def test_langchain_vector_store_gives_faiss_flat_chunks(encoder, faiss):
    search = LangChainSearch(lc_store(encoder).as_retriever())
    got = search.search(QUERIES, 3)
    assert ids(got) == ids(faiss.search(QUERIES, 3))
    assert got[0][0].chunk == bridge_corpus().get("alpha")  # title prefix removed from page_content
    # k is the framework's own k, per call (the retriever's default is 4).
    assert [len(h) for h in search.search(QUERIES, 6)] == [6, 6, 0, 6]
    assert ids(asyncio.run(search.asearch(QUERIES, 3))) == ids(got)
    # LangChain retrievers return no scores: 1 / rank keeps the order.
    assert [h.score for h in got[0]] == [1.0, 0.5, pytest.approx(1 / 3)]


@pytest.mark.numerics
def test_llamaindex_vector_index_gives_faiss_flat_chunks_and_scores(llama_index, faiss):
    search = LlamaIndexSearch(llama_index.as_retriever())
    got, want = search.search(QUERIES, 3), faiss.search(QUERIES, 3)
    assert ids(got) == ids(want)
    assert [h.score for h in got[1]] == pytest.approx([h.score for h in want[1]], abs=1e-5)
    assert [len(h) for h in search.search(QUERIES, 5)] == [5, 5, 0, 5]
    assert ids(asyncio.run(search.asearch(QUERIES, 3))) == ids(got)


def test_llamaindex_nodes_that_embed_their_id_and_title_are_warned_about_once(encoder, llama_index, caplog):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    nodes = [
        TextNode(id_=c.id, text=c.contents, metadata={"id": c.id, "title": c.title}) for c in bridge_corpus()
    ]
    embedded = VectorStoreIndex(nodes, embed_model=llamaindex_embedding(encoder))
    with caplog.at_level(logging.WARNING, logger="efficientrag.retrieval.framework"):
        LlamaIndexSearch(llama_index.as_retriever()).search(QUERIES, 3)  # excludes both keys
        assert not caplog.records
        search = LlamaIndexSearch(embedded.as_retriever())
        search.search(QUERIES, 3)
        search.search(QUERIES, 3)
    [warning] = [r.getMessage() for r in caplog.records]
    assert "these nodes do not exclude 'id', 'title'" in warning
    assert "set excluded_embed_metadata_keys=['id', 'title']" in warning


def test_a_retriever_with_a_k_field_gets_a_copy_with_k():
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Keyword(BaseRetriever):  # a real LangChain retriever in the style of BM25Retriever
        k: int = 2

        def _get_relevant_documents(self, query, *, run_manager):
            words = set(query.lower().split())
            scored = [(len(words & set(c.contents.lower().split())), c) for c in bridge_corpus()]
            ranked = [c for s, c in sorted(scored, key=lambda x: -x[0]) if s > 0]
            return [
                Document(page_content=c.contents, metadata={"id": c.id, "title": c.title})
                for c in ranked[: self.k]
            ]

    retriever = Keyword()
    search = LangChainSearch(retriever)
    assert len(search.search(["film directed by"], 4)[0]) == 3  # three chunks share a word
    assert len(search.search(["film directed by"], 1)[0]) == 1
    assert retriever.k == 2  # the user's object is left as it was


def test_missing_id_metadata_is_a_clear_error_and_id_key_none_uses_document_ids(encoder):
    store = lc_store(encoder, with_ids=False)
    with pytest.raises(
        MissingChunkIdError, match=r"LangChain result for query 'Bob Stone' has no metadata 'id'.*id_key"
    ):
        LangChainSearch(store.as_retriever()).search(["Bob Stone"], 2)
    assert ids(LangChainSearch(store.as_retriever(), id_key=None).search(["Bob Stone"], 1)) == [["bob"]]
    with pytest.raises(TypeError, match="as_retriever"):
        LangChainSearch(store)


@pytest.mark.numerics
@pytest.mark.parametrize("backend", ["langchain", "llamaindex"])
def test_efficientrag_on_a_framework_retriever_equals_faiss(backend, encoder, faiss, llama_index):
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG

    search = (
        LangChainSearch(lc_store(encoder).as_retriever())
        if backend == "langchain"
        else LlamaIndexSearch(llama_index.as_retriever())
    )
    assert not hasattr(search, "corpus")
    cfg = EfficientRAGConfig(top_k=3, max_hops=3)
    runs = [
        EfficientRAG(r, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), cfg).retrieve_batch(
            [ALPHA_QUESTION, OMEGA_QUESTION]
        )
        for r in (faiss, search)
    ]
    assert [r.chunk_ids for r in runs[0]] == [r.chunk_ids for r in runs[1]]
    assert set(runs[1][0].chunk_ids) == {"alpha", "bob"}
    hop_hits = [[[h.id for h in hits] for hop in r.trace for hits in hop.hits] for r in runs[1]]
    assert hop_hits == [[[h.id for h in hits] for hop in r.trace for hits in hop.hits] for r in runs[0]]
