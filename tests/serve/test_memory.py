"""The service hands what each batch freed back to the OS when ``serve.trim_memory`` is on (the
default), also after a failed batch, and not when it is off; on glibc the trim really runs."""

from __future__ import annotations

import platform

import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.factory import build_retriever
from efficientrag.serve import memory, service
from efficientrag.serve.config import ServeConfig
from tests.serve.serve_harness import build_tiny_models, write_corpus


@pytest.fixture(scope="module")
def rag(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-memory")
    models = build_tiny_models(root / "models")
    retriever = build_retriever(
        RetrieverConfig(kind="bm25"), Corpus.load(write_corpus(root / "corpus.jsonl")), root / "index"
    )
    return EfficientRAG.from_config(
        retriever, EfficientRAGConfig(labeler=models["labeler"], filter=models["filter"])
    )


@pytest.fixture
def trims(monkeypatch):
    calls = []
    monkeypatch.setattr(service, "release_freed_memory", lambda: calls.append(1) or True)
    return calls


def test_the_default_trims_after_every_batch(rag, trims):
    svc = service.Service(rag, "bm25", trim_memory=ServeConfig().trim_memory)
    svc.run((), ["Where was the director of Film 3 born?"])
    svc.run((("top_k", 3),), ["Who directed Film 7?", "Where was Person 2 born?"])
    assert len(trims) == 2


def test_a_failed_batch_is_trimmed_too(rag, trims):
    svc = service.Service(rag, "bm25", trim_memory=True)
    with pytest.raises(ValueError):
        svc.run((), [""])  # an empty question: the loop refuses the batch
    assert len(trims) == 1


def test_trim_memory_off_never_trims(rag, trims):
    svc = service.Service(rag, "bm25", trim_memory=False)
    svc.run((), ["Where was the director of Film 3 born?"])
    assert trims == []


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_on_glibc_the_trim_runs():
    assert memory.release_freed_memory() is True
