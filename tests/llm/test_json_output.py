"""parse_json_output on what LLMs really write: fences, chatter, nesting, junk, missing keys."""

from __future__ import annotations

import pytest

from efficientrag.llm.errors import LLMOutputError
from efficientrag.llm.json_output import parse_json_output


def reason(text, *args, **kwargs) -> str:
    with pytest.raises(LLMOutputError) as info:
        parse_json_output(text, *args, **kwargs)
    assert info.value.text == text
    return info.value.reason


def test_plain_object():
    assert parse_json_output('{"answer": "Paris"}', ["answer"]) == {"answer": "Paris"}


def test_fenced_json():
    text = 'Sure!\n```json\n{\n  "answer": "Paris",\n  "hops": 2\n}\n```\nHope this helps.'
    assert parse_json_output(text, ("answer", "hops")) == {"answer": "Paris", "hops": 2}


def test_chatty_with_braces_in_prose_before_the_json():
    text = 'I will fill in {answer} as asked. Here it is: {"answer": "Lyon"} -- done {really}.'
    assert parse_json_output(text, ["answer"]) == {"answer": "Lyon"}


def test_nested_object_returned_whole_and_braces_inside_strings_ignored():
    text = 'Result: {"a": {"b": [1, {"c": "}{ ]["}]}, "d": "x \\" } y"} trailing'
    assert parse_json_output(text) == {"a": {"b": [1, {"c": "}{ ]["}]}, "d": 'x " } y'}


def test_first_object_wins():
    assert parse_json_output('{"n": 1} and then {"n": 2}') == {"n": 1}


def test_array_when_asked():
    text = 'The sub-questions are:\n["Who directed X?", "When was he born?"]\nThanks'
    assert parse_json_output(text, expect=list) == ["Who directed X?", "When was he born?"]
    assert parse_json_output('[{"q": 1}]') == {"q": 1}


def test_common_llm_slips_are_tolerated():
    assert parse_json_output('{"a": [1, 2,], "b": 3,}') == {"a": [1, 2], "b": 3}
    assert parse_json_output("{'answer': 'Paris', 'sure': True, 'x': None}") == {
        "answer": "Paris",
        "sure": True,
        "x": None,
    }
    assert parse_json_output('{"answer": "it\'s Paris"}') == {"answer": "it's Paris"}


def test_reasons_are_short_and_specific():
    assert reason("") == "empty output"
    assert reason("   \n") == "empty output"
    assert reason(None) == "empty output"
    assert reason("The answer is Paris.") == "no JSON object found"
    assert reason("no list here", expect=list) == "no JSON array found"
    assert reason('{"answer": "Par') == "unterminated JSON object"
    assert reason('{"answer": "Paris"}', ["answer", "evidence"]) == "missing key 'evidence'"
    assert reason("{answer: Paris}").startswith("invalid JSON object:")
    assert reason('["a", "b"]', ["a"], expect=list) == "required keys need a JSON object"


def test_invalid_span_is_skipped_not_mined_for_fragments():
    # The broken outer object contains a valid inner one; returning it would be a wrong answer.
    text = '{"answer": {"x": 1} oops}'
    assert reason(text).startswith("invalid JSON object")


def test_bad_expect_argument():
    with pytest.raises(TypeError):
        parse_json_output("{}", expect=str)


def test_error_is_a_value_error_with_reason_attribute():
    with pytest.raises(ValueError) as info:
        parse_json_output("nothing")
    assert info.value.reason == "no JSON object found"
