"""The DSPy retriever: a real dspy.Module retrieves through EfficientRAG and answers with DSPy's
DummyLM, the Prediction carries the pool in order with ids, titles, scores, hops and the trace, a
batch is one batched loop, optimizer copies share the loop, and a missing dspy is one line."""

from __future__ import annotations

import copy
import importlib
import sys

import pytest

pytest.importorskip("dspy", reason="needs the dspy extra")

import dspy  # noqa: E402
from dspy.utils import DummyLM  # noqa: E402

from efficientrag.pipeline.dspy import EfficientRAGRetriever  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    bridge_corpus,
    spy_retrieve_batch,
)
from efficientrag.testing.scripted_models import scripted_rag as make_rag  # noqa: E402


class RAG(dspy.Module):
    """The DSPy tutorial's RAG program with EfficientRAG as its retrieval step."""

    def __init__(self, retrieve: EfficientRAGRetriever) -> None:
        super().__init__()
        self.retrieve = retrieve
        self.respond = dspy.Predict("context: list[str], question: str -> answer: str")

    def forward(self, question: str) -> dspy.Prediction:
        context = self.retrieve(question).passages
        return self.respond(context=context, question=question)


def test_prediction_holds_the_pool_in_order_with_its_metadata_and_trace():
    out = EfficientRAGRetriever(make_rag())(ALPHA_QUESTION)
    assert isinstance(out, dspy.Prediction)
    corpus = bridge_corpus()
    assert out.passages == [corpus.get("alpha").contents, corpus.get("bob").contents]
    assert out.ids == ["alpha", "bob"] and out.titles == ["Alpha", "Bob"]
    assert out.scores == [0.9, 0.7] and out.hops == [0, 1]
    assert out.queries == [ALPHA_QUESTION, "Bob Stone"]
    assert [h["queries"] for h in out.trace] == [[ALPHA_QUESTION], ["Bob Stone"], ["Paris"]]
    # k caps the passages (pool order), per retriever or per call.
    assert EfficientRAGRetriever(make_rag(), k=1)(ALPHA_QUESTION).ids == ["alpha"]
    assert EfficientRAGRetriever(make_rag())(ALPHA_QUESTION, k=1).passages == out.passages[:1]


def test_a_dspy_module_retrieves_through_efficientrag_and_answers():
    lm = DummyLM([{"answer": "Paris"}])
    program = RAG(EfficientRAGRetriever(make_rag()))
    with dspy.context(lm=lm):
        result = program(question=ALPHA_QUESTION)
    assert result.answer == "Paris"
    prompt = lm.history[-1]["messages"][-1]["content"]
    alpha, bob = (bridge_corpus().get(i).contents for i in ("alpha", "bob"))
    assert alpha in prompt and bob in prompt and prompt.index(alpha) < prompt.index(bob)
    assert ALPHA_QUESTION in prompt
    # The retriever is a parameter of the program, like DSPy's own retrievers; its state is k.
    assert ("retrieve", program.retrieve) in program.named_parameters()
    assert program.retrieve.dump_state() == {"k": None}


def test_optimizer_copies_share_the_loop():
    program = RAG(EfficientRAGRetriever(make_rag(), k=2))
    for clone in (copy.deepcopy(program), program.deepcopy(), program.reset_copy()):
        assert clone.retrieve is not program.retrieve and clone.retrieve.rag is program.retrieve.rag
        assert clone.retrieve.k == 2
        assert clone.respond is not program.respond


def test_batch_is_one_batched_loop_and_equals_one_by_one():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    retriever = EfficientRAGRetriever(rag)
    batched = retriever.batch([ALPHA_QUESTION, OMEGA_QUESTION])
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]
    single = [EfficientRAGRetriever(make_rag())(q) for q in (ALPHA_QUESTION, OMEGA_QUESTION)]
    assert [b.ids for b in batched] == [s.ids for s in single] == [["alpha", "bob"], ["omega", "carla"]]
    assert [b.scores for b in batched] == [s.scores for s in single]
    assert [
        b.ids for b in retriever.batch([ALPHA_QUESTION, OMEGA_QUESTION, ALPHA_QUESTION], 1, group_size=2)
    ] == [
        ["alpha"],
        ["omega"],
        ["alpha"],
    ]
    assert calls[1:] == [[ALPHA_QUESTION, OMEGA_QUESTION], [ALPHA_QUESTION]]


def test_missing_dspy_says_how_to_install_in_one_line(monkeypatch):
    for name in [m for m in sys.modules if m == "dspy" or m.startswith("dspy.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "dspy", None)
    monkeypatch.delitem(sys.modules, "efficientrag.pipeline.dspy", raising=False)
    with pytest.raises(ImportError) as info:
        importlib.import_module("efficientrag.pipeline.dspy")
    message = str(info.value)
    assert "\n" not in message and message.startswith("efficientrag.pipeline.dspy needs dspy>=")
    assert message.endswith("install it with: pip install 'efficientrag[dspy]'")
