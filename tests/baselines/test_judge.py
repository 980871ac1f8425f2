import pytest

from efficientrag.baselines.config import JudgeConfig
from efficientrag.baselines.judge import (
    INSTRUCTION,
    VERDICT_SCHEMA,
    JudgeItem,
    LLMJudge,
    judge_messages,
    parse_verdict,
)
from efficientrag.llm.config import LLMConfig
from efficientrag.testing.fake_completions import request_text
from efficientrag.testing.fake_openai import FakeOpenAIServer


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('{"response": "yes"}', True),
        ('```json\n{"response": "No"}\n```', False),
        ("Sure! {'Response': 'YES'} is my verdict.", True),
        ('{"correct": true}', True),
        ('{"verdict": "incorrect."}', False),
        ('{"is_correct": 0}', False),
        ("Yes.", True),
        ("no, the dates differ", False),
        ("**Correct**", True),
        ("maybe", None),
        ("", None),
        (None, None),
        ('{"response": "unsure"}', None),
        ('{"explanation": "same city"}', None),
        ("The prediction is right", None),
    ],
)
def test_parse_verdict_is_tolerant_but_does_not_guess(reply, verdict):
    assert parse_verdict(reply) is verdict


def test_judge_prompt_lists_every_alias():
    (msg,) = judge_messages("Where?", "Paris", ["Paris", "City of Paris"])
    assert msg["content"].startswith(INSTRUCTION)
    assert "Reference answer(s): Paris | City of Paris\nPredicted answer: Paris\n" in msg["content"]


def test_judge_asks_each_distinct_item_once_and_caches(tmp_path):
    def respond(request):
        text = request_text(request)
        if "Predicted answer: boom" in text:
            raise RuntimeError("scripted failure")
        return '{"response": "yes"}' if "Predicted answer: Paris" in text else "I am not sure."

    cfg = JudgeConfig(
        enabled=True,
        llm=LLMConfig(model="judge", api_key="k", max_retries=0, cache_dir=str(tmp_path / "cache")),
    )
    items = [
        JudgeItem("Where?", "Paris", ("Paris",)),
        JudgeItem("Where?", "Paris", ("Paris",)),
        JudgeItem("Where?", "Lyon", ("Paris",)),
        JudgeItem("Where?", "  ", ("Paris",)),
        JudgeItem("Where?", "boom", ("Paris",)),
    ]
    with FakeOpenAIServer(respond) as srv:
        cfg.llm.base_url = srv.base_url
        judge = LLMJudge(cfg)
        verdicts = judge.judge(items)
        assert srv.total_requests == 3  # Paris once, Lyon, boom; the blank prediction is not asked
        again = judge.judge(items[:3])
        assert srv.total_requests == 3  # answered from the on-disk cache, no new request
        judge.close()
    assert [v.correct for v in verdicts] == [True, True, None, False, None]
    assert (
        verdicts[2].raw == "I am not sure." and verdicts[4].error and "LLMRequestError" in verdicts[4].error
    )
    assert [v.correct for v in again] == [True, True, None]


def test_judge_needs_a_model():
    with pytest.raises(ValueError, match="baselines.judge.llm.model"):
        LLMJudge(JudgeConfig(enabled=True))


@pytest.mark.parametrize(
    ("constrain", "expected"),
    [
        ("none", None),
        ("json_object", {"type": "json_object", "schema": VERDICT_SCHEMA}),
        (
            "json_schema",
            {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA},
            },
        ),
    ],
)
def test_constrained_judge_sends_the_verdict_schema(constrain, expected):
    seen = []

    def respond(request):
        seen.append(request.get("response_format"))
        return '{"response": "no"}'

    with FakeOpenAIServer(respond) as srv:
        cfg = JudgeConfig(
            enabled=True,
            constrain=constrain,
            llm=LLMConfig(model="judge", api_key="k", max_retries=0, base_url=srv.base_url),
        )
        judge = LLMJudge(cfg)
        (verdict,) = judge.judge([JudgeItem("Where?", "Lyon", ("Paris",))])
        judge.close()
    assert verdict.correct is False
    assert seen == [expected]
    assert VERDICT_SCHEMA["properties"]["response"]["enum"] == ["yes", "no"]


@pytest.mark.parametrize(
    "reply",
    [
        # Verbatim SmolLM2-135M replies to the judge prompt (HotpotQA dev predictions, llama.cpp
        # server, `python benchmarks/real_llm.py judge`): the model answered the question instead of
        # judging it, sometimes with the word "correct" in the sentence. Unconstrained, such replies
        # are judge failures, never guessed verdicts.
        "The Queen of the Shadows\n\nThis answer is correct based on the provided JSON object. "
        "The Queen of the Shadows refers to a fictional character in the",
        "The correct answer is Terry Richardson.",
        "The answer to this question is yes.",
    ],
)
def test_small_model_reply_that_answers_instead_of_judging_is_not_a_verdict(reply):
    assert parse_verdict(reply) is None


def test_unknown_constraint_is_refused():
    with pytest.raises(ValueError, match="^constrain must be"):
        JudgeConfig(constrain="grammar")
