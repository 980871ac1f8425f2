"""A framework store whose documents have an empty id, or share one, stops the search (issue 48).

The loop keys chunks by id: over documents whose metadata said ``"id": ""``, hit 1 was judged and
hits 2-10 were taken as already seen, so ``LangChainSearch`` returned 0 chunks without a word. Every
framework search (LangChain, LlamaIndex, Haystack, DSPy) goes through one check; each is built here
from the framework's own objects, with no encoder.
"""

from __future__ import annotations

import pytest

from efficientrag.retrieval.framework import MissingChunkIdError
from efficientrag.testing.scripted_models import bridge_corpus

CHUNKS = list(bridge_corpus())


def ids_from(kind: str) -> list[str]:
    """The id each chunk's document carries: its own, all empty, or two sharing one."""
    if kind == "empty":
        return [""] * len(CHUNKS)
    if kind == "blank":
        return ["alpha", "  ", *[c.id for c in CHUNKS[2:]]]
    if kind == "shared":
        return ["alpha", "doc-1", "doc-1", *[c.id for c in CHUNKS[3:]]]
    return [c.id for c in CHUNKS]


def langchain(kind: str):
    pytest.importorskip("langchain_core", reason="needs the langchain extra")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from efficientrag.retrieval.framework import LangChainSearch

    docs = [
        Document(page_content=c.contents, metadata={"id": i, "title": c.title})
        for c, i in zip(CHUNKS, ids_from(kind), strict=True)
    ]

    class Fixed(BaseRetriever):  # returns the documents in corpus order
        def _get_relevant_documents(self, query, *, run_manager):
            return docs

    return LangChainSearch(Fixed())


def llamaindex(kind: str):
    pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    from efficientrag.retrieval.framework import LlamaIndexSearch

    nodes = [
        NodeWithScore(
            node=TextNode(
                text=c.contents,
                metadata={"id": i, "title": c.title},
                excluded_embed_metadata_keys=["id", "title"],
            ),
            score=1.0 / (n + 1),
        )
        for n, (c, i) in enumerate(zip(CHUNKS, ids_from(kind), strict=True))
    ]

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle):
            return nodes

    return LlamaIndexSearch(Fixed())


def haystack(kind: str):
    pytest.importorskip("haystack", reason="needs the haystack extra")
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from efficientrag.retrieval.haystack_search import HaystackSearch

    store = InMemoryDocumentStore()
    # Every document shares the query's words, so all of them come back.
    store.write_documents(
        [
            Document(content=f"film {c.contents}", meta={"id": i, "title": c.title})
            for c, i in zip(CHUNKS, ids_from(kind), strict=True)
        ]
    )
    return HaystackSearch(store)


def dspy(kind: str):
    pytest.importorskip("dspy", reason="needs the dspy extra")
    from efficientrag.retrieval.dspy_search import DSPySearch

    records = [
        {"id": i, "title": c.title, "long_text": c.contents}
        for c, i in zip(CHUNKS, ids_from(kind), strict=True)
    ]
    return DSPySearch(lambda query: records)


BACKENDS = {"LangChain": langchain, "LlamaIndex": llamaindex, "Haystack": haystack, "DSPy": dspy}


@pytest.mark.parametrize("framework", list(BACKENDS))
def test_own_ids_are_searched(framework):
    hits = BACKENDS[framework]("own").search(["film"], 6)[0]
    assert sorted(h.id for h in hits) == sorted(c.id for c in CHUNKS)


@pytest.mark.parametrize("framework", list(BACKENDS))
def test_an_empty_id_is_a_one_line_error_naming_the_result_and_the_key(framework):
    with pytest.raises(MissingChunkIdError) as err:
        BACKENDS[framework]("empty").search(["film"], 6)
    assert str(err.value) == (
        f"{framework} result 1 for query 'film' has an empty id '' (metadata 'id'): every document needs "
        "its own chunk id; give each document its corpus id when you index it, or set id_key to the key "
        "that holds one"
    )
    with pytest.raises(MissingChunkIdError, match=r"result \d for query 'film' has an empty id '  '"):
        BACKENDS[framework]("blank").search(["film"], 6)


@pytest.mark.parametrize("framework", list(BACKENDS))
def test_one_id_on_two_documents_of_a_result_list_is_an_error(framework):
    with pytest.raises(MissingChunkIdError) as err:
        BACKENDS[framework]("shared").search(["film"], 6)
    message = str(err.value)
    assert message.startswith(f"{framework} result ")
    assert "has the id 'doc-1' of result " in message and "(metadata 'id')" in message
    assert "\n" not in message


def test_the_loop_over_empty_ids_stops_instead_of_returning_nothing():
    """The reported symptom: EfficientRAG over such a store kept 0 chunks and said nothing."""
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.testing.scripted_models import (
        ALPHA_QUESTION,
        USEFUL_WORDS,
        InfoOnlyFilter,
        ScriptedLabeler,
    )

    rag = EfficientRAG(
        langchain("empty"), ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), EfficientRAGConfig()
    )
    with pytest.raises(MissingChunkIdError, match="has an empty id"):
        rag.retrieve(ALPHA_QUESTION)
