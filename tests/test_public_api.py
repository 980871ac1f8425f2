"""The names the README tells users to import, and the README's own usage example."""

import subprocess
import sys

import efficientrag


def test_top_level_import_is_cheap_and_every_export_resolves():
    code = "import sys, efficientrag; print('torch' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )
    for name in efficientrag.__all__:
        assert getattr(efficientrag, name) is not None


def test_readme_usage_with_your_own_corpus(tmp_path):
    """The README's "plug it into your pipeline" steps, with scripted models in place of trained ones."""
    from efficientrag import Chunk, Corpus, EfficientRAG, EfficientRAGConfig, RetrieverConfig, build_retriever
    from efficientrag.testing.scripted_models import (
        ALPHA_QUESTION,
        USEFUL_WORDS,
        InfoOnlyFilter,
        ScriptedLabeler,
        bridge_corpus,
    )

    corpus = Corpus([Chunk(c.id, c.title, c.text) for c in bridge_corpus()])
    corpus.save(tmp_path / "corpus.jsonl")
    corpus = Corpus.load(tmp_path / "corpus.jsonl")
    retriever = build_retriever(RetrieverConfig(kind="bm25"), corpus, tmp_path / "index")
    rag = EfficientRAG(
        retriever, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), EfficientRAGConfig(top_k=2, max_hops=3)
    )
    result = rag.retrieve(ALPHA_QUESTION)
    assert result.chunk_ids == ["alpha", "bob"]
    assert result.counters["llm_calls"] == 0 and len(result.trace) >= 2


def test_the_milvus_backend_is_one_subpackage_whose_settings_load_without_pymilvus():
    code = (
        "import sys\n"
        "from efficientrag.retrieval.config import RetrieverConfig\n"
        "from efficientrag.retrieval.milvus.config import MilvusConfig\n"
        "assert RetrieverConfig().milvus == MilvusConfig()\n"
        "print('pymilvus' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr
    import efficientrag.retrieval as retrieval
    import efficientrag.retrieval.milvus as milvus
    from efficientrag.retrieval.milvus.retriever import MilvusRetriever, staging_file

    assert milvus.MilvusRetriever is retrieval.MilvusRetriever is MilvusRetriever
    assert milvus.staging_file is staging_file and milvus.MilvusConfig is retrieval.MilvusConfig
