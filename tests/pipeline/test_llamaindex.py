"""The LlamaIndex adapter: nodes in pool order with hop metadata, sync/async/batched entry points
that agree, a query engine whose LLM reads the kept chunks (and none of the metadata), and a clear
error without llama-index-core."""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
import threading
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload  # noqa: E402
from llama_index.core.callbacks.base_handler import BaseCallbackHandler  # noqa: E402
from llama_index.core.llms import (  # noqa: E402
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode  # noqa: E402

from efficientrag.pipeline.adapters import TRACE_KEY
from efficientrag.pipeline.llamaindex import EfficientRAGRetriever  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    CONFIDENCE,
    OMEGA_QUESTION,
    USEFUL_WORDS,
    ScriptedLabeler,
    bridge_corpus,
    spy_retrieve_batch,
)
from efficientrag.testing.scripted_models import scripted_rag as make_rag  # noqa: E402


def ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_nodes_follow_the_pool_with_hop_of_entry_and_labeler_scores():
    nodes = EfficientRAGRetriever(make_rag()).retrieve(ALPHA_QUESTION)
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert ids(nodes) == ["alpha", "bob"]
    corpus = bridge_corpus()
    assert [n.node.text for n in nodes] == [corpus.get("alpha").contents, corpus.get("bob").contents]
    assert [n.score for n in nodes] == [0.9, 0.7]
    assert [n.node.metadata for n in nodes] == [
        {"id": "alpha", "title": "Alpha", "continue_prob": 0.9, "hop": 0, "query": ALPHA_QUESTION},
        {"id": "bob", "title": "Bob", "continue_prob": 0.7, "hop": 1, "query": "Bob Stone"},
    ]


def test_metadata_stays_out_of_llm_and_embedding_text():
    nodes = EfficientRAGRetriever(make_rag(), include_trace=True).retrieve(ALPHA_QUESTION)
    for n in nodes:
        for mode in (MetadataMode.LLM, MetadataMode.EMBED):
            assert n.node.get_content(metadata_mode=mode) == n.node.text
    assert "continue_prob" in nodes[0].node.get_content(metadata_mode=MetadataMode.ALL)


def test_three_hop_chain_numbers_every_hop():
    useful = {**USEFUL_WORDS, "Paris": ["Franconia"]}
    nodes = EfficientRAGRetriever(make_rag(useful)).retrieve(ALPHA_QUESTION)
    assert [(n.node.node_id, n.node.metadata["hop"], n.node.metadata["query"]) for n in nodes] == [
        ("alpha", 0, ALPHA_QUESTION),
        ("bob", 1, "Bob Stone"),
        ("paris", 2, "Paris"),
    ]


def test_trace_only_when_asked():
    assert all(
        TRACE_KEY not in n.node.metadata for n in EfficientRAGRetriever(make_rag()).retrieve(ALPHA_QUESTION)
    )
    nodes = EfficientRAGRetriever(make_rag(), include_trace=True).retrieve(QueryBundle(ALPHA_QUESTION))
    trace = nodes[0].node.metadata[TRACE_KEY]
    assert [h["queries"] for h in trace] == [[ALPHA_QUESTION], ["Bob Stone"], ["Paris"]]
    assert nodes[1].node.metadata[TRACE_KEY] is trace


def test_nothing_kept_gives_no_nodes():
    assert EfficientRAGRetriever(make_rag(useful={})).retrieve(ALPHA_QUESTION) == []


def test_aretrieve_matches_retrieve_and_runs_off_the_event_loop_thread():
    threads: list[int] = []

    class ThreadRecordingLabeler(ScriptedLabeler):
        def predict(self, pairs, **kw):
            threads.append(threading.get_ident())
            return super().predict(pairs, **kw)

    adapter = EfficientRAGRetriever(make_rag(labeler=ThreadRecordingLabeler(USEFUL_WORDS, CONFIDENCE)))
    expected = adapter.retrieve(ALPHA_QUESTION)
    threads.clear()

    async def main():
        return threading.get_ident(), await adapter.aretrieve(ALPHA_QUESTION)

    loop_thread, nodes = asyncio.run(main())
    assert nodes == expected
    assert threads and all(t != loop_thread for t in threads)


def test_retrieve_batch_is_one_batched_loop_and_equals_one_by_one():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    batched = EfficientRAGRetriever(rag).retrieve_batch([ALPHA_QUESTION, QueryBundle(OMEGA_QUESTION)])
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]
    assert len(rag.labeler.calls) == 3  # one Labeler call per hop for both questions
    single = [EfficientRAGRetriever(make_rag()).retrieve(q) for q in (ALPHA_QUESTION, OMEGA_QUESTION)]
    assert batched == single
    assert [ids(nodes) for nodes in batched] == [["alpha", "bob"], ["omega", "carla"]]
    assert EfficientRAGRetriever(rag).retrieve_batch([]) == []


def test_group_size_splits_the_batch_without_changing_results():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    questions = [ALPHA_QUESTION, OMEGA_QUESTION, ALPHA_QUESTION]
    out = EfficientRAGRetriever(rag).retrieve_batch(questions, group_size=2)
    assert calls == [questions[:2], questions[2:]]
    assert out == EfficientRAGRetriever(make_rag()).retrieve_batch(questions)


def test_aretrieve_batch_is_one_batched_loop_and_equals_retrieve_batch():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    out = asyncio.run(EfficientRAGRetriever(rag).aretrieve_batch([ALPHA_QUESTION, OMEGA_QUESTION]))
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]
    assert out == EfficientRAGRetriever(make_rag()).retrieve_batch([ALPHA_QUESTION, OMEGA_QUESTION])


class Recorder(BaseCallbackHandler):
    """Pairs each RETRIEVE start with its end, the way LlamaIndex's debug handlers do."""

    def __init__(self):
        super().__init__([], [])
        self.starts: dict[str, str] = {}
        self.ends: dict[str, Any] = {}

    def on_event_start(self, event_type, payload=None, event_id="", parent_id="", **kw):
        if event_type == CBEventType.RETRIEVE:
            self.starts[event_id] = payload[EventPayload.QUERY_STR]
        return event_id

    def on_event_end(self, event_type, payload=None, event_id="", **kw):
        if event_type == CBEventType.RETRIEVE:
            self.ends[event_id] = payload

    def start_trace(self, trace_id=None):
        pass

    def end_trace(self, trace_id=None, trace_map=None):
        pass

    def runs(self) -> list[tuple[str, Any]]:
        return [(query, self.ends.get(event_id)) for event_id, query in self.starts.items()]


def test_retrieve_batch_reports_one_retrieval_per_question_like_retrieve():
    rec = Recorder()
    EfficientRAGRetriever(make_rag(), callback_manager=CallbackManager([rec])).retrieve_batch(
        [ALPHA_QUESTION, OMEGA_QUESTION]
    )
    runs = rec.runs()
    assert [q for q, _ in runs] == [ALPHA_QUESTION, OMEGA_QUESTION]
    assert [ids(end[EventPayload.NODES]) for _, end in runs] == [["alpha", "bob"], ["omega", "carla"]]
    single = Recorder()
    EfficientRAGRetriever(make_rag(), callback_manager=CallbackManager([single])).retrieve(OMEGA_QUESTION)
    assert [(q, ids(end[EventPayload.NODES])) for q, end in single.runs()] == [
        (OMEGA_QUESTION, ["omega", "carla"])
    ]


def test_a_failing_loop_fails_every_question_of_the_group():
    class BrokenLabeler(ScriptedLabeler):
        def predict(self, pairs, **kw):
            raise RuntimeError("labeler down")

    rec = Recorder()
    adapter = EfficientRAGRetriever(
        make_rag(labeler=BrokenLabeler({})), callback_manager=CallbackManager([rec])
    )
    with pytest.raises(RuntimeError, match="labeler down"):
        adapter.retrieve_batch([ALPHA_QUESTION, OMEGA_QUESTION])
    runs = rec.runs()
    assert [q for q, _ in runs] == [ALPHA_QUESTION, OMEGA_QUESTION]
    assert all(isinstance(end[EventPayload.EXCEPTION], RuntimeError) for _, end in runs)
    with pytest.raises(RuntimeError, match="labeler down"):
        asyncio.run(adapter.aretrieve(ALPHA_QUESTION))


class ContextReadingLLM(CustomLLM):
    """Answers with the birthplace named in the context it is given ("unknown" if none), and keeps
    every prompt, so a test can tell what reached the LLM."""

    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=4096, num_output=64, model_name="context-reading")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        found = re.search(r"born in (\w+)", prompt)
        return CompletionResponse(text=found.group(1) if found else "unknown")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        answer = self.complete(prompt, formatted=formatted, **kwargs).text
        yield CompletionResponse(text=answer, delta=answer)


def test_a_query_engine_answers_from_the_multi_hop_pool():
    llm = ContextReadingLLM(prompts=[])
    engine = RetrieverQueryEngine.from_args(EfficientRAGRetriever(make_rag(), include_trace=True), llm=llm)
    response = engine.query(ALPHA_QUESTION)
    # The answer is in the second hop's chunk only: the question alone never names Bob Stone.
    assert str(response) == "Paris"
    assert ids(response.source_nodes) == ["alpha", "bob"]
    (prompt,) = llm.prompts
    corpus = bridge_corpus()
    assert corpus.get("alpha").contents in prompt and corpus.get("bob").contents in prompt
    assert ALPHA_QUESTION in prompt
    # Only the kept chunks, and none of their metadata (hop, score, trace).
    assert "Lyon" not in prompt and "Franconia" not in prompt
    assert all(f"{key}: " not in prompt for key in ("continue_prob", "hop", "query", "trace", "title"))
    assert str(asyncio.run(engine.aquery(OMEGA_QUESTION))) == "Lyon"
    # A loop that keeps nothing leaves the LLM without the answer.
    empty = RetrieverQueryEngine.from_args(EfficientRAGRetriever(make_rag(useful={})), llm=llm)
    assert str(empty.query(ALPHA_QUESTION)) != "Paris"


def test_from_pretrained_loads_trained_model_folders(tmp_path):
    from efficientrag.models import Filter, Labeler
    from efficientrag.testing.scripted_models import STOPWORDS
    from efficientrag.testing.tiny_backbones import tiny_modernbert
    from efficientrag.testing.token_tasks import sentences
    from efficientrag.testing.word_overlap import WordOverlapRetriever
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
    nodes = adapter.retrieve(ALPHA_QUESTION)
    assert ids(nodes) == ["alpha", "bob"] and {n.node.metadata["hop"] for n in nodes} == {0}
    corpus = bridge_corpus()
    preds = adapter.rag.labeler.predict(
        [(split_words(ALPHA_QUESTION), split_words(corpus.get(i).contents)) for i in ("alpha", "bob")]
    )
    assert [n.score for n in nodes] == pytest.approx([p.continue_prob for p in preds])
    with pytest.raises(ValueError, match="labeler"):  # the folders swapped: refused, not misused
        EfficientRAGRetriever.from_pretrained(retriever, fil_dir, lab_dir)


def test_missing_llama_index_core_says_how_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "llama_index" or m.startswith("llama_index.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "llama_index.core", None)
    monkeypatch.delitem(sys.modules, "efficientrag.pipeline.llamaindex", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'efficientrag\[llamaindex\]'") as info:
        importlib.import_module("efficientrag.pipeline.llamaindex")
    assert isinstance(info.value.__cause__, ImportError)
