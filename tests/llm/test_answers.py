"""Hand-checked answer extraction cases, including the ones that break naive regexes."""

from __future__ import annotations

import pytest

from efficientrag.llm.answers import clean_answer, extract_answer, extract_answer_detailed

SO_THE_ANSWER_IS = [
    ("Anna Weiss was born in Vienna. So the answer is Vienna.", "Vienna"),
    ("The company was founded there. So the answer is St. Louis.", "St. Louis"),
    ("So the answer is St. Louis. The city lies on the Mississippi.", "St. Louis"),
    ("He moved to the coast. So the answer is the U.S.", "the U.S."),
    ("So the answer is U.S. Steel. It was founded in 1901.", "U.S. Steel"),
    ("So the answer is Martin Luther King Jr.", "Martin Luther King Jr."),
    ("Both are in Spain. So the answer is yes.", "yes"),
    ("So the answer is No", "No"),
    ("So the answer is no.\n\nQuestion: next one", "no"),
    ('So the answer is "The Big Sleep".', "The Big Sleep"),
    ('So the answer is "The "Big" Apple".', 'The "Big" Apple'),
    ('So the answer is "Mr. Smith Goes to Washington". The film won.', "Mr. Smith Goes to Washington"),
    ("So the answer is \u201cCasablanca.\u201d", "Casablanca"),
    ("So the answer is 3.5 million. That is large.", "3.5 million"),
    ("So the answer is 1954. She studied physics.", "1954"),
    ("so the answer is: **Harbor Lions**", "Harbor Lions"),
    ("So the answer is\nVienna", "Vienna"),
    # The last occurrence wins: an earlier one is part of the reasoning or echoes an exemplar.
    ("First I thought so the answer is Rome. But the text says Milan. So the answer is Milan.", "Milan"),
    ("So the answer is Rome.\nSo the answer is Milan.\n", "Milan"),
    # A trailing empty occurrence does not erase the real one.
    ("So the answer is Paris. So the answer is", "Paris"),
]


@pytest.mark.parametrize(("text", "expected"), SO_THE_ANSWER_IS)
def test_so_the_answer_is(text, expected):
    assert extract_answer(text, "so_the_answer_is") == expected
    assert extract_answer(text) == expected  # auto finds the same


SELF_ASK = [
    (
        "Follow up: Who is the mother of the king?\nIntermediate answer: Queen Ada.\n"
        "So the final answer is: Queen Ada",
        "Queen Ada",
    ),
    ("Are follow up questions needed here: No.\nSo the final answer is: St. Petersburg.", "St. Petersburg"),
    ("So the final answer is yes.", "yes"),
    # Falls back to "So the answer is" when the model drops "final".
    ("Intermediate answer: 1962.\nSo the answer is 1962.", "1962"),
]


@pytest.mark.parametrize(("text", "expected"), SELF_ASK)
def test_self_ask(text, expected):
    assert extract_answer(text, "self_ask") == expected


JSON_CASES = [
    ('{"answer": "Vienna"}', "Vienna"),
    ('```json\n{"answer": "St. Louis"}\n```', "St. Louis"),
    ('Sure! Here is the answer:\n{"answer": "the U.S."}\nHope this helps.', "the U.S."),
    ('{"thought": "born in {city}", "answer": "Valencia"}', "Valencia"),
    ("{'answer': 'Harbor Lions'}", "Harbor Lions"),
    ('{"Answer": 1954}', "1954"),
    ('{"answer": true}', "yes"),
    ('{"answer": ["Paris", "Lyon"]}', "Paris, Lyon"),
    ('{"answer": "yes."}', "yes"),
]


@pytest.mark.parametrize(("text", "expected"), JSON_CASES)
def test_json(text, expected):
    assert extract_answer(text, "json") == expected
    assert extract_answer_detailed(text).source == "json"


def test_json_style_without_json_falls_back_to_last_line():
    got = extract_answer_detailed("I am not sure.\nParis", "json")
    assert got.answer == "Paris" and got.source == "last_line" and not got.followed_format


def test_auto_order_json_before_phrase_and_answer_line():
    text = 'So the answer is Rome.\n{"answer": "Milan"}'
    assert extract_answer(text) == "Milan"
    assert extract_answer(text, "so_the_answer_is") == "Rome"
    got = extract_answer_detailed("Reasoning here.\nAnswer: Maria Lopez.")
    assert (got.answer, got.source) == ("Maria Lopez", "answer_line")
    got = extract_answer_detailed("I believe the answer is Thomas Berg. He directed it.")
    assert (got.answer, got.source) == ("Thomas Berg", "answer_is")


def test_last_line_fallback_and_empty():
    got = extract_answer_detailed("The film came out in 1987.\n\n  Thomas Berg.  \n")
    assert (got.answer, got.source) == ("Thomas Berg", "last_line")
    assert extract_answer_detailed("").source == "empty"
    assert extract_answer(None) == ""
    assert extract_answer("   \n") == ""


def test_raw_style_only_cleans():
    assert extract_answer(' "Vienna." ', "raw") == "Vienna"
    assert extract_answer("So the answer is Paris.", "raw") == "So the answer is Paris"


def test_unknown_style_is_an_error():
    with pytest.raises(ValueError, match="answer style"):
        extract_answer("x", "yaml")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ("U.S.", "U.S."),
        ("A.", "A"),
        ("Washington St.", "Washington St."),
        ("'Paris'", "Paris"),
        ("Paris...", "Paris"),
        ("  Vienna;", "Vienna"),
    ],
)
def test_clean_answer(span, expected):
    assert clean_answer(span) == expected
