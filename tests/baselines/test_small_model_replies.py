"""What SmolLM2-135M-Instruct really wrote (tests/fixtures/smollm2/), and the library changes it
forced: answer extraction for its openings, and ``baselines.prompts.prefill``, which opens the
reply with the requested JSON key so the model writes the value instead of a sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from efficientrag.baselines.base import SharedSettings
from efficientrag.baselines.cot import CoT
from efficientrag.baselines.decompose_r import DecomposeR
from efficientrag.baselines.direct import Direct
from efficientrag.baselines.prompts.config import PromptConfig
from efficientrag.data.schema import Example
from efficientrag.llm.answers import extract_answer_detailed
from efficientrag.llm.generator import Generation, GeneratorCounters, GeneratorSupport
from efficientrag.testing.scripted_models import bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever

FIXTURES = Path(__file__).parents[1] / "fixtures" / "smollm2"


def _replies(name: str) -> list[dict]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))["replies"]


class ReplayGenerator:
    """Answers every prompt with the next scripted continuation and keeps the prompts it got."""

    name = "replay"

    def __init__(self, continuations: list[str]) -> None:
        self.continuations = list(continuations)
        self.prompts: list = []
        self.counters = GeneratorCounters()
        self.supports = GeneratorSupport(
            token_probs=False, entropies=False, attention=False, chat=True, raw_completion=True
        )

    def generate(self, prompts, *, max_new_tokens, stop=None, temperature=0.0, **kw):
        self.prompts.extend(prompts)
        out = []
        for _ in prompts:
            text = self.continuations.pop(0)
            out.append(Generation(text=text, finish_reason="stop", prompt_tokens=10, completion_tokens=5))
        return out


def test_real_direct_replies_without_prefill():
    """Before prefill, SmolLM2 opened every Direct reply with "The answer to this question is:".
    The extractor reads what follows that phrase (the first occurrence: the model states its
    answer, then explains), and a reply that stops right after it has no answer (not the phrase
    itself as the answer)."""
    got = [extract_answer_detailed(r["reply"]) for r in _replies("direct_replies.json")]
    assert [g.answer for g in got] == [
        "",
        "The Chronicles of Narnia",
        'The director of the romantic comedy "Big Stone Gap" is based in New York City',
    ]
    assert [g.source for g in got] == ["empty", "answer_is", "answer_is"]


def _example() -> Example:
    return Example("q1", "Where was the director of Alpha film born?", ["Paris"], ["alpha", "bob"])


@pytest.mark.parametrize("prefill", [True, False])
def test_prefill_opens_the_reply_with_the_json_key(prefill):
    gen = ReplayGenerator(['Paris"}' if prefill else '{"answer": "Paris"}'])
    method = Direct(None, lambda: gen, shared=SharedSettings(prompts=PromptConfig(prefill=prefill)))
    pred = method.run_batch([_example()])[0]
    prompt = gen.prompts[0]
    if prefill:
        assert prompt[-1] == {"role": "assistant", "content": '{"answer": "'}
    else:
        assert [m["role"] for m in prompt] == ["user"]
    assert pred.raw_output == '{"answer": "Paris"}'
    assert pred.answer == "Paris" and pred.trace["followed_format"]


def test_prefill_for_thought_and_decomposition_replies():
    gen = ReplayGenerator(['Bob Stone directed Alpha.", "answer": "Paris"}'])
    pred = CoT(None, lambda: gen, shared=SharedSettings(prompts=PromptConfig(prefill=True))).run_batch(
        [_example()]
    )[0]
    assert gen.prompts[0][-1]["content"] == '{"thought": "'
    assert pred.answer == "Paris" and pred.trace["thought"] == "Bob Stone directed Alpha."

    gen = ReplayGenerator(['Who directed Alpha film?", "Where was Bob Stone born?"]}', 'Paris"}'])
    method = DecomposeR(
        WordOverlapRetriever(bridge_corpus()),
        lambda: gen,
        shared=SharedSettings(prompts=PromptConfig(prefill=True)),
    )
    pred = method.run_batch([_example()])[0]
    assert gen.prompts[0][-1]["content"] == '{"decomposed_questions": ["'
    assert pred.trace["decomposition"]["sub_questions"] == [
        "Who directed Alpha film?",
        "Where was Bob Stone born?",
    ]
    assert pred.answer == "Paris"


def test_prefill_needs_chat_prompts():
    gen = ReplayGenerator(['{"answer": "Paris"}'])
    Direct(
        None, lambda: gen, shared=SharedSettings(prompts=PromptConfig(prefill=True, chat=False))
    ).run_batch([_example()])
    assert isinstance(gen.prompts[0], str)
