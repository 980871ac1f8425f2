"""The LangChain adapter: Documents in pool order with hop metadata, sync/async/batched entry points
that agree, one batched loop for ``batch``, and a clear error without langchain-core."""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from efficientrag.pipeline.adapters import TRACE_KEY
from efficientrag.pipeline.langchain import EfficientRAGRetriever  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    CONFIDENCE,
    OMEGA_QUESTION,
    STOPWORDS,
    USEFUL_WORDS,
    ScriptedLabeler,
    bridge_corpus,
    spy_retrieve_batch,
)
from efficientrag.testing.scripted_models import scripted_rag as make_rag  # noqa: E402
from efficientrag.testing.word_overlap import WordOverlapRetriever  # noqa: E402


def test_documents_follow_the_pool_with_hop_of_entry():
    rag = make_rag()
    docs = EfficientRAGRetriever(rag=rag).invoke(ALPHA_QUESTION)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == ["alpha", "bob"]
    corpus = bridge_corpus()
    assert [d.page_content for d in docs] == [corpus.get("alpha").contents, corpus.get("bob").contents]
    assert docs[0].page_content == "Alpha: Alpha is a film directed by Bob Stone."
    assert [d.metadata for d in docs] == [
        {"id": "alpha", "title": "Alpha", "continue_prob": 0.9, "hop": 0, "query": ALPHA_QUESTION},
        {"id": "bob", "title": "Bob", "continue_prob": 0.7, "hop": 1, "query": "Bob Stone"},
    ]
    # The question itself retrieved (and the Labeler rejected) the Bob chunk at hop 0: its hop is
    # where it was kept, not where it was first seen.
    trace = rag.retrieve(ALPHA_QUESTION).trace
    hop0 = {r.id: r for r in trace[0].hits[0]}
    assert hop0["bob"].tag == "terminate"


def test_three_hop_chain_numbers_every_hop():
    useful = {**USEFUL_WORDS, "Paris": ["Franconia"]}
    docs = EfficientRAGRetriever(rag=make_rag(useful)).invoke(ALPHA_QUESTION)
    assert [(d.id, d.metadata["hop"], d.metadata["query"]) for d in docs] == [
        ("alpha", 0, ALPHA_QUESTION),
        ("bob", 1, "Bob Stone"),
        ("paris", 2, "Paris"),
    ]
    assert [d.metadata["continue_prob"] for d in docs] == [0.9, 0.7, 0.55]


def test_trace_only_when_asked():
    assert all(
        TRACE_KEY not in d.metadata for d in EfficientRAGRetriever(rag=make_rag()).invoke(ALPHA_QUESTION)
    )
    docs = EfficientRAGRetriever(rag=make_rag(), include_trace=True).invoke(ALPHA_QUESTION)
    trace = docs[0].metadata[TRACE_KEY]
    assert [h["queries"] for h in trace] == [[ALPHA_QUESTION], ["Bob Stone"], ["Paris"]]
    assert docs[1].metadata[TRACE_KEY] is trace


def test_nothing_kept_gives_no_documents():
    assert EfficientRAGRetriever(rag=make_rag(useful={})).invoke(ALPHA_QUESTION) == []


def test_ainvoke_matches_invoke_and_runs_off_the_event_loop_thread():
    threads: list[int] = []

    class ThreadRecordingLabeler(ScriptedLabeler):
        def predict(self, pairs, **kw):
            threads.append(threading.get_ident())
            return super().predict(pairs, **kw)

    adapter = EfficientRAGRetriever(rag=make_rag(labeler=ThreadRecordingLabeler(USEFUL_WORDS, CONFIDENCE)))
    expected = adapter.invoke(ALPHA_QUESTION)
    threads.clear()

    async def main():
        return threading.get_ident(), await adapter.ainvoke(ALPHA_QUESTION)

    loop_thread, docs = asyncio.run(main())
    assert docs == expected
    assert threads and all(t != loop_thread for t in threads)


def test_batch_is_one_batched_loop_and_equals_one_by_one():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    batched = EfficientRAGRetriever(rag=rag).batch([ALPHA_QUESTION, OMEGA_QUESTION])
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]
    assert len(rag.labeler.calls) == 3  # one Labeler call per hop for both questions
    single = [EfficientRAGRetriever(rag=make_rag()).invoke(q) for q in (ALPHA_QUESTION, OMEGA_QUESTION)]
    assert batched == single
    assert [[d.id for d in docs] for docs in batched] == [["alpha", "bob"], ["omega", "carla"]]
    assert [d.metadata["hop"] for d in batched[1]] == [0, 1]


def test_max_concurrency_splits_the_batch_without_changing_results():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    questions = [ALPHA_QUESTION, OMEGA_QUESTION, ALPHA_QUESTION]
    out = EfficientRAGRetriever(rag=rag).batch(questions, {"max_concurrency": 2})
    assert calls == [questions[:2], questions[2:]]
    assert out == EfficientRAGRetriever(rag=make_rag()).batch(questions)
    assert EfficientRAGRetriever(rag=rag).batch([]) == []


def test_abatch_is_one_batched_loop_and_equals_batch():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    out = asyncio.run(EfficientRAGRetriever(rag=rag).abatch([ALPHA_QUESTION, OMEGA_QUESTION]))
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]
    assert out == EfficientRAGRetriever(rag=make_rag()).batch([ALPHA_QUESTION, OMEGA_QUESTION])


class Recorder(BaseCallbackHandler):
    def __init__(self):
        self.starts, self.ends, self.errors = [], [], []

    def on_retriever_start(self, serialized, query, **kw):
        self.starts.append(query)

    def on_retriever_end(self, documents, **kw):
        self.ends.append([d.id for d in documents])

    def on_retriever_error(self, error, **kw):
        self.errors.append(error)


def test_batch_reports_one_retriever_run_per_question():
    rec = Recorder()
    EfficientRAGRetriever(rag=make_rag()).batch([ALPHA_QUESTION, OMEGA_QUESTION], {"callbacks": [rec]})
    assert rec.starts == [ALPHA_QUESTION, OMEGA_QUESTION]
    assert rec.ends == [["alpha", "bob"], ["omega", "carla"]] and rec.errors == []
    rec_async = Recorder()
    asyncio.run(EfficientRAGRetriever(rag=make_rag()).abatch([OMEGA_QUESTION], {"callbacks": [rec_async]}))
    assert rec_async.starts == [OMEGA_QUESTION] and rec_async.ends == [["omega", "carla"]]


def test_a_failing_loop_fails_every_question_of_the_batch():
    class BrokenLabeler(ScriptedLabeler):
        def predict(self, pairs, **kw):
            raise RuntimeError("labeler down")

    adapter = EfficientRAGRetriever(rag=make_rag(labeler=BrokenLabeler({})))
    with pytest.raises(RuntimeError, match="labeler down"):
        adapter.batch([ALPHA_QUESTION, OMEGA_QUESTION])
    rec = Recorder()
    out = adapter.batch([ALPHA_QUESTION, OMEGA_QUESTION], {"callbacks": [rec]}, return_exceptions=True)
    assert [type(e) for e in out] == [RuntimeError, RuntimeError]
    assert len(rec.errors) == 2 and rec.ends == []
    out = asyncio.run(adapter.abatch([ALPHA_QUESTION], return_exceptions=True))
    assert isinstance(out[0], RuntimeError)


def test_a_chain_that_starts_with_the_retriever_batches_through_it():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    chain = EfficientRAGRetriever(rag=rag) | RunnableLambda(lambda docs: " | ".join(d.id for d in docs))
    assert chain.batch([ALPHA_QUESTION, OMEGA_QUESTION]) == ["alpha | bob", "omega | carla"]
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]


def test_from_pretrained_loads_trained_model_folders(tmp_path):
    from efficientrag.models import Filter, Labeler
    from efficientrag.testing.tiny_backbones import tiny_modernbert
    from efficientrag.testing.token_tasks import sentences
    from efficientrag.text.words import split_words

    backbone = str(tiny_modernbert(tmp_path / "mb", sentences(200)))
    lab_dir = Labeler.from_backbone(backbone, device="cpu").save_pretrained(tmp_path / "labeler")
    fil_dir = Filter.from_backbone(backbone, device="cpu").save_pretrained(tmp_path / "filter")
    retriever = WordOverlapRetriever(bridge_corpus(), STOPWORDS)
    # Random weights: a zero tag threshold keeps every hit and a Filter threshold of 1 (no word is
    # that sure) ends the loop after hop 0, so the kept chunks are known while the scores are the
    # real model's.
    adapter = EfficientRAGRetriever.from_pretrained(
        retriever, lab_dir, fil_dir, top_k=2, tag_threshold=0.0, filter_threshold=1.0, device="cpu"
    )
    assert isinstance(adapter.rag.labeler, Labeler) and isinstance(adapter.rag.filter, Filter)
    assert adapter.rag.config.labeler == str(lab_dir) and adapter.rag.config.top_k == 2
    docs = adapter.invoke(ALPHA_QUESTION)
    assert [d.id for d in docs] == ["alpha", "bob"] and {d.metadata["hop"] for d in docs} == {0}
    corpus = bridge_corpus()
    preds = adapter.rag.labeler.predict(
        [(split_words(ALPHA_QUESTION), split_words(corpus.get(i).contents)) for i in ("alpha", "bob")]
    )
    assert [d.metadata["continue_prob"] for d in docs] == pytest.approx([p.continue_prob for p in preds])
    with pytest.raises(ValueError, match="labeler"):  # the folders swapped: refused, not misused
        EfficientRAGRetriever.from_pretrained(retriever, fil_dir, lab_dir)


def test_missing_langchain_core_says_how_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "langchain_core" or m.startswith("langchain_core.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    monkeypatch.delitem(sys.modules, "efficientrag.pipeline.langchain", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'efficientrag\[langchain\]'") as info:
        importlib.import_module("efficientrag.pipeline.langchain")
    assert isinstance(info.value.__cause__, ImportError)
