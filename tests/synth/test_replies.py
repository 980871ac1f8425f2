"""Parsing the LLM teacher's replies: what is accepted, and the reason a bad reply is rejected with."""

import json

import pytest

from efficientrag.synth.records import Reject
from efficientrag.synth.replies import (
    R_DOCUMENT,
    R_NO_JSON,
    R_SHAPE,
    parse_decomposition,
    parse_extracted_words,
    parse_filtered_query,
)

PARAGRAPHS = [("c7", "Edda Marrin"), ("c3", "Marlowe Ceramics Guild")]


def dq(*subs, wrap=lambda s: s):
    body = {"decomposed_questions": {str(k): s for k, s in enumerate(subs, start=1)}}
    return wrap(json.dumps(body))


def sub(q="Who?", a="X", dep=(), doc=1):
    return {"sub_question": q, "answer": a, "dependency": list(dep), "document": doc}


def rejected(fn, *args):
    with pytest.raises(Reject) as err:
        fn(*args)
    return err.value.reason, err.value.detail


@pytest.mark.parametrize(
    "wrap",
    [
        lambda s: s,
        lambda s: f"```json\n{s}\n```",
        lambda s: f"Here is the decomposition you asked for:\n{s}\nI hope {{this}} helps.",
        lambda s: s.replace('"', "'"),  # Python-style literal
    ],
    ids=["plain", "fenced", "chatter", "python-literal"],
)
def test_decomposition_reply_in_any_wrapping(wrap):
    text = dq(
        sub("Who founded it?", "Edda Marrin", (), 2),
        sub("Where was she born?", "Tavrick", (1,), 1),
        wrap=wrap,
    )
    subs = parse_decomposition(text, PARAGRAPHS)
    assert [(s.idx, s.chunk_id, s.dependency, s.answer) for s in subs] == [
        (1, "c3", [], "Edda Marrin"),
        (2, "c7", [1], "Tavrick"),
    ]


def test_lenient_where_unambiguous():
    text = json.dumps(
        {
            "decomposed_questions": {
                "2": {"sub_question": " B? ", "answer": 1952, "dependency": "1", "document": "[1]"},
                "1": {
                    "sub_question": "A?",
                    "answer": ["7 May", "9 June"],
                    "document": "marlowe ceramics guild",
                },
            }
        }
    )
    a, b = parse_decomposition(text, PARAGRAPHS)
    assert (a.idx, a.chunk_id, a.dependency, a.answer, a.answer_parts) == (
        1,
        "c3",
        [],
        "7 May and 9 June",
        ["7 May", "9 June"],
    )
    assert (b.sub_question, b.answer, b.dependency, b.chunk_id) == ("B?", "1952", [1], "c7")
    as_list = json.dumps({"decomposed_questions": [sub(doc="Paragraph 2"), sub(dep=[1], doc=1)]})
    assert [s.chunk_id for s in parse_decomposition(as_list, PARAGRAPHS)] == ["c3", "c7"]


@pytest.mark.parametrize(
    ("reply", "reason", "detail"),
    [
        ("I could not find the answer.", R_NO_JSON, "no JSON object found"),
        ('{"decomposed_questions": {"1": {"sub_question": "A?"', R_NO_JSON, "unterminated"),
        ('{"sub_questions": {}}', R_SHAPE, "missing key 'decomposed_questions'"),
        ('{"decomposed_questions": "A? then B?"}', R_SHAPE, "expected an object"),
        ('{"decomposed_questions": {}}', R_SHAPE, "is empty"),
        ('{"decomposed_questions": {"first": {}}}', R_SHAPE, "key 'first'"),
        ('{"decomposed_questions": {"1": "A?"}}', R_SHAPE, "sub-question 1 is str"),
        (dq({"sub_question": "A?", "document": 1}), R_SHAPE, "no 'answer'"),
        (dq(sub(q=["A?"])), R_SHAPE, "'sub_question' is list"),
        (dq(sub(a={"text": "X"})), R_SHAPE, "'answer' is dict"),
        (dq(sub(a=True)), R_SHAPE, "'answer' is bool"),
        (dq(sub(dep=["the first"])), R_SHAPE, "'dependency' holds 'the first'"),
        (dq(sub(dep=[True])), R_SHAPE, "'dependency' holds True"),
        (dq(sub(doc=3)), R_DOCUMENT, "paragraph 3 of 2"),
        (dq(sub(doc=0)), R_DOCUMENT, "paragraph 0 of 2"),
        (dq(sub(doc="Somewhere Else")), R_DOCUMENT, "'Somewhere Else'"),
        (dq(sub(doc=None)), R_DOCUMENT, "None"),
    ],
)
def test_bad_decomposition_replies_are_rejected_with_a_reason(reply, reason, detail):
    got_reason, got_detail = rejected(parse_decomposition, reply, PARAGRAPHS)
    assert got_reason == reason
    assert detail in got_detail


def test_extracted_words():
    assert parse_extracted_words('{"extracted_words": "born in Tavrick (1888)"}') == [
        "born",
        "in",
        "Tavrick",
        "(",
        "1888",
        ")",
    ]
    assert parse_extracted_words('```\n{"extracted_words": ["Edda Marrin", " ", "born"]}\n```') == [
        "Edda Marrin",
        "born",
    ]
    assert parse_extracted_words('{"extracted_words": ""}') == []
    assert rejected(parse_extracted_words, '{"words": "x"}')[0] == R_SHAPE
    assert rejected(parse_extracted_words, '{"extracted_words": 3}')[0] == R_SHAPE
    assert rejected(parse_extracted_words, '{"extracted_words": ["a", 3]}')[0] == R_SHAPE
    assert rejected(parse_extracted_words, "Edda Marrin")[0] == R_NO_JSON


def test_filtered_query():
    assert parse_filtered_query('Answer: {"filtered_query": " Where was born? Edda Marrin "}') == (
        "Where was born? Edda Marrin"
    )
    assert parse_filtered_query('{"filtered_query": ["Where was born ?", "Edda Marrin"]}') == (
        "Where was born ? Edda Marrin"
    )
    assert rejected(parse_filtered_query, '{"filtered_query": null}')[0] == R_SHAPE
    assert rejected(parse_filtered_query, '{"query": "x"}') == (
        R_SHAPE,
        "missing key 'filtered_query'; reply: '{\"query\": \"x\"}'",
    )
