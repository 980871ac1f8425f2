"""A reranker folder trained here works in each framework's own cross-encoder reranker, and they
rank as our ``rerank`` method does: LangChain's ``CrossEncoderReranker``, LlamaIndex's
``SentenceTransformerRerank`` and Haystack's ``SentenceTransformersSimilarityRanker``, each over the
same hits with the same text per chunk, keep the same chunks in the same order (scores to float
noise). So the framework docs' comparisons (EfficientRAG beside that framework's reranker over the
same store) compare what the benchmark measured."""

from __future__ import annotations

import pytest

from efficientrag.baselines.rerank import Rerank, RerankConfig
from efficientrag.data.schema import Example
from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, bridge_corpus
from efficientrag.testing.tiny_backbones import tiny_cross_encoder
from efficientrag.testing.token_tasks import sentences
from efficientrag.testing.word_overlap import WordOverlapRetriever

pytestmark = pytest.mark.numerics
TOP_N, KEEP = 6, 3


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    texts = sentences(100) + [c.contents for c in bridge_corpus()] + [ALPHA_QUESTION, OMEGA_QUESTION]
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "reranker", texts)


@pytest.fixture(scope="module")
def ours(folder):
    """Our method's top KEEP for each question: (id, score) pairs."""
    retriever = WordOverlapRetriever(bridge_corpus())
    method = Rerank(retriever, None, RerankConfig(model=str(folder), top_n=TOP_N, device="cpu"))
    out = {}
    for q in (ALPHA_QUESTION, OMEGA_QUESTION):
        (pred,) = method.run_batch([Example(id="q", question=q, answers=[], gold_chunk_ids=[])])
        out[q] = [(c.id, s) for c, s in list(zip(pred.chunks, pred.scores, strict=True))[:KEEP]]
    return out


def hits(question: str):
    return WordOverlapRetriever(bridge_corpus()).search([question], TOP_N)[0]


def same_ranking(theirs: list[tuple[str, float]], mine: list[tuple[str, float]]) -> None:
    assert [i for i, _ in theirs] == [i for i, _ in mine]
    assert [s for _, s in theirs] == pytest.approx([s for _, s in mine], abs=1e-5)


def test_langchains_cross_encoder_reranker_keeps_what_rerank_keeps(folder, ours):
    pytest.importorskip("langchain_classic")
    pytest.importorskip("langchain_community")
    from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
    from langchain_community.cross_encoders import HuggingFaceCrossEncoder
    from langchain_core.documents import Document

    model = HuggingFaceCrossEncoder(model_name=str(folder), model_kwargs={"device": "cpu"})
    reranker = CrossEncoderReranker(model=model, top_n=KEEP)
    for q, mine in ours.items():
        docs = [Document(page_content=h.chunk.contents, id=h.id) for h in hits(q)]
        kept = reranker.compress_documents(docs, q)
        scores = model.score([(q, d.page_content) for d in kept])
        same_ranking([(d.id, float(s)) for d, s in zip(kept, scores, strict=True)], mine)


def test_llamaindexs_sentence_transformer_rerank_keeps_what_rerank_keeps(folder, ours):
    pytest.importorskip("llama_index.core")
    from llama_index.core.postprocessor import SentenceTransformerRerank
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    reranker = SentenceTransformerRerank(model=str(folder), top_n=KEEP, device="cpu", trust_remote_code=False)
    for q, mine in ours.items():
        nodes = [
            NodeWithScore(node=TextNode(id_=h.id, text=h.chunk.contents), score=h.score) for h in hits(q)
        ]
        kept = reranker.postprocess_nodes(nodes, query_bundle=QueryBundle(q))
        same_ranking([(n.node.node_id, float(n.score)) for n in kept], mine)


def test_haystacks_similarity_ranker_keeps_what_rerank_keeps(folder, ours):
    pytest.importorskip("haystack_integrations.components.rankers.sentence_transformers")
    from haystack import Document
    from haystack.utils import ComponentDevice
    from haystack_integrations.components.rankers.sentence_transformers import (
        SentenceTransformersSimilarityRanker,
    )

    ranker = SentenceTransformersSimilarityRanker(
        model=str(folder), top_k=KEEP, scale_score=True, device=ComponentDevice.from_str("cpu"), token=None
    )
    ranker.warm_up()
    for q, mine in ours.items():
        docs = [Document(id=h.id, content=h.chunk.contents) for h in hits(q)]
        kept = ranker.run(query=q, documents=docs)["documents"]
        same_ranking([(d.id, float(d.score)) for d in kept], mine)
