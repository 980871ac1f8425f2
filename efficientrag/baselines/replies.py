"""How the answering methods read a reply: the JSON openings their prompts ask for, the answer,
a string field, and what the trace records about the reply's format."""

from __future__ import annotations

from efficientrag.llm.answers import ExtractedAnswer, extract_answer_detailed
from efficientrag.llm.errors import LLMOutputError
from efficientrag.llm.json_output import parse_json_output

# Openings of the replies the prompts ask for (used with prompts.prefill).
ANSWER_PREFIX = '{"answer": "'
THOUGHT_PREFIX = '{"thought": "'
DECOMPOSE_PREFIX = '{"decomposed_questions": ["'


def read_answer(text: str, expected: str = "json") -> ExtractedAnswer:
    """The answer of a reply. ``expected`` is the format its prompt asked for ("json" or
    "self_ask"); a reply that ignored it still yields the best guess of the lenient extractor."""
    return extract_answer_detailed(text, "auto" if expected == "json" else expected)  # type: ignore[arg-type]


def read_json_field(text: str, key: str) -> str | None:
    """A string field of the JSON object in a reply (None when there is no such object or key)."""
    try:
        obj = parse_json_output(text, expect=dict)
    except LLMOutputError:
        return None
    value = obj.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def answer_trace(found: ExtractedAnswer, expected: str = "json") -> dict[str, object]:
    return {"answer_source": found.source, "followed_format": found.source == expected}
