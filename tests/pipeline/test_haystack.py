"""The Haystack component: Documents in pool order with hop metadata and the trace, a real Pipeline
(retriever -> ChatPromptBuilder -> Haystack's MockChatGenerator) end to end, a batch equal to one by
one, a YAML round trip that loads the trained folders by path, and one-line errors."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

pytest.importorskip("haystack", reason="needs the haystack extra")

from haystack import Document, Pipeline  # noqa: E402
from haystack.components.builders import ChatPromptBuilder  # noqa: E402
from haystack.components.generators.chat import MockChatGenerator  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402

from efficientrag.pipeline.haystack import EfficientRAGRetriever  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    bridge_corpus,
    spy_retrieve_batch,
)
from efficientrag.testing.scripted_models import scripted_rag as make_rag  # noqa: E402

TEMPLATE = [
    ChatMessage.from_user(
        "Context:\n{% for doc in documents %}{{ doc.content }}\n{% endfor %}Question: {{ question }}"
    )
]


def rag_pipeline(retriever: EfficientRAGRetriever) -> Pipeline:
    """Retriever -> prompt -> generator; the mock generator (shipped by Haystack for tests) echoes
    the prompt, so the reply shows exactly what the LLM would have read."""
    pipe = Pipeline()
    pipe.add_component("retriever", retriever)
    pipe.add_component(
        "prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["documents", "question"])
    )
    pipe.add_component("llm", MockChatGenerator())
    pipe.connect("retriever.documents", "prompt.documents")
    pipe.connect("prompt.prompt", "llm.messages")
    return pipe


def ask(pipe: Pipeline, question: str) -> dict:
    return pipe.run(
        {"retriever": {"query": question}, "prompt": {"question": question}},
        include_outputs_from={"retriever"},
    )


def test_documents_follow_the_pool_with_hop_metadata_score_and_trace():
    out = EfficientRAGRetriever(rag=make_rag()).run(ALPHA_QUESTION)
    docs = out["documents"]
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == ["alpha", "bob"]
    corpus = bridge_corpus()
    assert [d.content for d in docs] == [corpus.get("alpha").contents, corpus.get("bob").contents]
    assert [d.meta for d in docs] == [
        {"id": "alpha", "title": "Alpha", "continue_prob": 0.9, "hop": 0, "query": ALPHA_QUESTION},
        {"id": "bob", "title": "Bob", "continue_prob": 0.7, "hop": 1, "query": "Bob Stone"},
    ]
    assert [d.score for d in docs] == [0.9, 0.7]
    assert [h["queries"] for h in out["trace"]] == [[ALPHA_QUESTION], ["Bob Stone"], ["Paris"]]
    json.dumps(out["trace"])  # JSON-ready, like predictions.jsonl


def test_a_pipeline_runs_retriever_prompt_and_generator_end_to_end():
    result = ask(rag_pipeline(EfficientRAGRetriever(rag=make_rag())), ALPHA_QUESTION)
    reply = result["llm"]["replies"][0].text
    assert reply == (
        "Context:\nAlpha: Alpha is a film directed by Bob Stone.\nBob: Bob Stone was born in Paris.\n"
        f"Question: {ALPHA_QUESTION}"
    )
    assert [d.id for d in result["retriever"]["documents"]] == ["alpha", "bob"]
    assert [h["hop"] for h in result["retriever"]["trace"]] == [0, 1, 2]


def test_run_batch_is_one_batched_loop_and_equals_run():
    rag = make_rag()
    calls = spy_retrieve_batch(rag)
    retriever = EfficientRAGRetriever(rag=rag)
    batched = retriever.run_batch([ALPHA_QUESTION, OMEGA_QUESTION])
    assert calls == [[ALPHA_QUESTION, OMEGA_QUESTION]]
    single = [EfficientRAGRetriever(rag=make_rag()).run(q) for q in (ALPHA_QUESTION, OMEGA_QUESTION)]
    assert batched["documents"] == [s["documents"] for s in single]
    untimed = [[{k: v for k, v in h.items() if k != "timings_s"} for h in t] for t in batched["trace"]]
    assert untimed == [[{k: v for k, v in h.items() if k != "timings_s"} for h in s["trace"]] for s in single]
    retriever.run_batch([ALPHA_QUESTION, OMEGA_QUESTION, ALPHA_QUESTION], group_size=2)
    assert calls[1:] == [[ALPHA_QUESTION, OMEGA_QUESTION], [ALPHA_QUESTION]]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Labeler and Filter folders (tiny random ModernBERT), a corpus file and its BM25 index folder."""
    from efficientrag.models import Filter, Labeler
    from efficientrag.testing.tiny_backbones import tiny_modernbert
    from efficientrag.testing.token_tasks import sentences

    root = tmp_path_factory.mktemp("haystack-trained")
    backbone = str(tiny_modernbert(root / "mb", sentences(200)))
    Labeler.from_backbone(backbone, device="cpu").save_pretrained(root / "labeler")
    Filter.from_backbone(backbone, device="cpu").save_pretrained(root / "filter")
    bridge_corpus().save(root / "corpus.jsonl")
    return root


def folder_retriever(root, **kw) -> EfficientRAGRetriever:
    # Random weights: a zero tag threshold keeps every hit and an unreachable Filter threshold ends the
    # loop after hop 0, so the kept chunks are known while the scores are the real model's.
    settings = {"top_k": 2, "tag_threshold": 0.0, "filter_threshold": 1.0, "device": "cpu"}
    return EfficientRAGRetriever(
        labeler=root / "labeler",
        filter=root / "filter",
        index_dir=root / "index",
        corpus=root / "corpus.jsonl",
        retriever={"kind": "bm25"},
        settings=settings,
        **kw,
    )


def test_pipeline_yaml_round_trip_loads_folders_by_path_and_answers_the_same(trained):
    pipe = rag_pipeline(folder_retriever(trained))
    question = "Bob Stone born Paris"
    before = ask(pipe, question)
    assert [d.id for d in before["retriever"]["documents"]] == ["bob", "alpha"]
    scores = [d.score for d in before["retriever"]["documents"]]
    assert all(0.0 < s < 1.0 for s in scores)  # the real Labeler's probabilities

    saved = pipe.dumps()
    assert str(trained / "labeler") in saved and "bm25" in saved and "filter_threshold: 1.0" in saved
    assert len(saved) < 4000  # paths and settings, no weights
    data = pipe.to_dict()["components"]["retriever"]
    assert data["type"] == "efficientrag.pipeline.haystack.EfficientRAGRetriever"
    assert EfficientRAGRetriever.from_dict(data).to_dict() == data

    # Haystack 3 builds only allow-listed classes from YAML: the user names this module.
    after = ask(Pipeline.loads(saved, allowed_modules=["efficientrag.pipeline.haystack"]), question)
    assert after["retriever"]["documents"] == before["retriever"]["documents"]
    assert after["llm"]["replies"][0].text == before["llm"]["replies"][0].text


def test_bad_construction_is_one_line_naming_the_argument(trained):
    with pytest.raises(
        FileNotFoundError, match=r"^EfficientRAGRetriever: labeler folder .*nope does not exist$"
    ):
        EfficientRAGRetriever(labeler=trained / "nope", filter=trained / "filter", index_dir=trained / "i")
    with pytest.raises(ValueError, match=r"needs index_dir="):
        EfficientRAGRetriever(labeler=trained / "labeler", filter=trained / "filter")
    with pytest.raises(
        ValueError, match=r"unknown config key 'settings.topk'; did you mean 'settings.top_k'"
    ):
        folder_retriever(trained).__class__(
            labeler=trained / "labeler",
            filter=trained / "filter",
            index_dir=trained / "i",
            settings={"topk": 3},
        )
    with pytest.raises(ValueError, match=r"unknown config key 'retriever.knd'"):
        EfficientRAGRetriever(
            labeler=trained / "labeler",
            filter=trained / "filter",
            index_dir=trained / "i",
            retriever={"knd": 1},
        )
    with pytest.raises(ValueError, match="not both"):
        EfficientRAGRetriever(rag=make_rag(), labeler=trained / "labeler")
    with pytest.raises(ValueError, match="built with rag= cannot be serialized"):
        EfficientRAGRetriever(rag=make_rag()).to_dict()


def test_missing_haystack_says_how_to_install_in_one_line(monkeypatch):
    for name in [m for m in sys.modules if m == "haystack" or m.startswith("haystack.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "haystack", None)
    monkeypatch.delitem(sys.modules, "efficientrag.pipeline.haystack", raising=False)
    with pytest.raises(ImportError) as info:
        importlib.import_module("efficientrag.pipeline.haystack")
    message = str(info.value)
    assert "\n" not in message and message.startswith("efficientrag.pipeline.haystack needs haystack-ai>=")
    assert message.endswith("install it with: pip install 'efficientrag[haystack]'")
    assert isinstance(info.value.__cause__, ImportError)
