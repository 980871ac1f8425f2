"""wo-RAG, SR-RAG, FL-RAG and FS-RAG on a scripted model (the fake OpenAI-compatible server): how
often each retrieves, with which query, and which documents each generation sees."""

from __future__ import annotations

import pytest

from efficientrag.baselines.fl_rag import FLRAG, FLRAGConfig
from efficientrag.baselines.fs_rag import FSRAG, FSRAGConfig
from efficientrag.baselines.prompts.continuation import DOC_INSTRUCTION, format_document
from efficientrag.baselines.sr_rag import SRRAG, SRRAGConfig
from efficientrag.baselines.wo_rag import WoRAG, WoRAGConfig
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.eval.runner import run_method
from efficientrag.jsonl import read_jsonl
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator_config import OpenAIGeneratorConfig
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_completions import request_text, tokenize
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.word_overlap import WordOverlapRetriever

QUESTION = "Where was the director of Alpha Film born?"
CORPUS = Corpus(
    [
        Chunk("alpha", "Alpha Film", "Alpha Film is a drama directed by Bob Stone."),
        Chunk("bob", "Bob Stone", "Bob Stone was born in Paris."),
        Chunk("bob2", "Bob Stone career", "Bob Stone was a director from France."),
        Chunk("rome", "Rome", "Rome is the capital of Italy."),
    ]
)
EXAMPLE = Example("q1", QUESTION, ["Paris"], ["alpha", "bob"])
TARGET = " Alpha Film was directed by Bob Stone. Bob Stone was born in Paris. So the answer is Paris."
COMMON = {"exemplars": "toy", "num_exemplars": 1, "top_k": 2}


def parse(prompt: str) -> tuple[str, list[str]]:
    """(answer written so far, ids of the documents in front of the question)."""
    head, test = prompt.rsplit("Question: ", 1)
    answer = test[len(QUESTION) :].split(":", 1)[1]
    docs: list[str] = []
    if head.endswith(DOC_INSTRUCTION + "\n"):
        by_text = {format_document(c): c.id for c in CORPUS}
        block = head[: -len(DOC_INSTRUCTION) - 1].rsplit("Context:\n", 1)[1]
        docs = [by_text[line.split("] ", 1)[1]] for line in block.strip().split("\n")]
    return answer, docs


class Continues:
    """A model that always continues ``text`` from where the answer stands; records what it saw."""

    def __init__(self, text: str = TARGET, then: str = "\n\nQuestion: next"):
        self.text = text + then
        self.seen: list[tuple[str, list[str]]] = []

    def __call__(self, request):
        answer, docs = parse(request_text(request))
        self.seen.append((answer, docs))
        assert self.text.startswith(answer), answer
        return self.text[len(answer) :]


def _run(method_cls, cfg, model, examples=(EXAMPLE,)):
    retriever = WordOverlapRetriever(CORPUS)
    with FakeOpenAIServer(model) as server:
        llm = LLMConfig(base_url=server.base_url, model="fake", api_key="k", max_retries=0, timeout=10)
        with OpenAIGenerator(OpenAIGeneratorConfig(llm=llm)) as gen:
            preds = method_cls(retriever, gen, cfg).run_batch(list(examples))
    return preds, retriever


def _docs(query: str, k: int = 2) -> list[str]:
    return [h.id for h in WordOverlapRetriever(CORPUS).search([query], k)[0]]


def test_wo_rag_never_retrieves_and_stops_at_the_blank_line():
    model = Continues()
    (pred,), retriever = _run(WoRAG, WoRAGConfig(**COMMON), model)
    assert retriever.queries == [] and model.seen == [("", [])]
    assert pred.raw_output == TARGET and pred.answer == "Paris"
    assert pred.chunks == [] and "retrieval_calls" not in pred.counters
    assert pred.counters["llm_calls"] == 1 and pred.counters["answer_tokens"] == len(tokenize(TARGET))


def test_answer_rule_appends_the_phrase_when_missing():
    def model(request):
        prompt = request_text(request)
        return (
            " Paris."
            if prompt.endswith("So the answer is")
            else " Bob Stone was born in Paris.\n\nQuestion: x"
        )

    (pred,), _ = _run(WoRAG, WoRAGConfig(**COMMON), model)
    assert pred.raw_output == " Bob Stone was born in Paris. So the answer is Paris."
    assert pred.answer == "Paris" and pred.counters["answer_retry_calls"] == 1
    (off,), _ = _run(WoRAG, WoRAGConfig(**COMMON, answer_retry_tokens=0), model)
    assert off.raw_output == " Bob Stone was born in Paris." and "answer_retry_calls" not in off.counters


def test_sr_rag_retrieves_once_with_the_question():
    model = Continues()
    (pred,), retriever = _run(SRRAG, SRRAGConfig(**COMMON), model)
    assert retriever.queries == [QUESTION]
    assert model.seen == [("", _docs(QUESTION))]
    assert [c.id for c in pred.chunks] == _docs(QUESTION)
    assert (pred.counters["retrieval_calls"], pred.counters["llm_calls"]) == (1, 1)


def test_fl_rag_retrieves_every_window_with_the_previous_window():
    model = Continues()
    (pred,), retriever = _run(FLRAG, FLRAGConfig(**COMMON, window=4), model)
    tokens = tokenize(TARGET)
    windows = ["".join(tokens[i : i + 4]) for i in range(0, len(tokens), 4)]
    # Query 1 is the question, query t the window written in step t-1; the last window ends the answer.
    assert retriever.queries == [QUESTION] + [w.strip() for w in windows[:-1]]
    assert len(windows) == 5 and pred.counters["retrieval_steps"] == 5
    answers = ["".join(windows[:i]) for i in range(len(windows))]
    assert model.seen == [(a, _docs(q)) for a, q in zip(answers, retriever.queries, strict=True)]
    assert pred.raw_output == TARGET and pred.answer == "Paris"


def test_fl_rag_respects_the_generation_length():
    model = Continues()
    (pred,), retriever = _run(
        FLRAG, FLRAGConfig(**COMMON, window=4, max_new_tokens=6, answer_retry_tokens=0), model
    )
    assert pred.counters["answer_tokens"] == 6 and len(retriever.queries) == 2
    assert [len(tokenize(a)) for a, _ in model.seen] == [0, 4]


def test_fs_rag_retrieves_before_every_sentence_with_the_previous_sentence():
    model = Continues()
    (pred,), retriever = _run(FSRAG, FSRAGConfig(**COMMON), model)
    s1, s2 = " Alpha Film was directed by Bob Stone.", " Bob Stone was born in Paris."
    assert retriever.queries == [QUESTION, s1.strip(), s2.strip()]
    assert model.seen == [("", _docs(QUESTION)), (s1, _docs(s1)), (s1 + s2, _docs(s2))]
    assert pred.counters["retrieval_steps"] == 3 and pred.answer == "Paris"
    assert [s["text"] for s in pred.trace["steps"]] == [s1, s2, " So the answer is Paris."]


@pytest.mark.parametrize("method", [WoRAG, SRRAG, FLRAG, FSRAG])
def test_batched_questions_keep_their_own_state(method, tmp_path):
    """Three questions in one batch: every call is routed to its own question, and the runner
    records counters that add up to the server's requests."""
    examples = [Example(f"q{i}", QUESTION, ["Paris"], ["bob"]) for i in range(3)]
    cfg_cls = {WoRAG: WoRAGConfig, SRRAG: SRRAGConfig, FLRAG: FLRAGConfig, FSRAG: FSRAGConfig}[method]
    retriever = WordOverlapRetriever(CORPUS)
    with FakeOpenAIServer(Continues()) as server:
        llm = LLMConfig(base_url=server.base_url, model="fake", api_key="k", max_retries=0, timeout=10)
        with OpenAIGenerator(OpenAIGeneratorConfig(llm=llm)) as gen:
            run_method(
                method(retriever, gen, cfg_cls(**COMMON)), examples, tmp_path, batch_size=3, progress=False
            )
            requests = server.total_requests
    records = list(read_jsonl(tmp_path / "predictions.jsonl"))
    assert [r["answer"] for r in records] == ["Paris"] * 3
    assert sum(r["counters"]["llm_calls"] for r in records) == requests
    assert sum(r["counters"].get("retrieval_calls", 0) for r in records) == len(retriever.queries)
    assert all(r["retrieval"]["all"]["recall"] in (0.0, 1.0) for r in records)
