"""Turn the LLM teacher's replies into records, or into rejects that say what was wrong.

The JSON keys are the paper's: ``decomposed_questions`` -> ``{"1": {sub_question, answer,
dependency, document}}``, ``extracted_words``, ``filtered_query``. JSON is found with the shared
tolerant parser (code fences, chatter around it, Python-style literals). Beyond the shape checked
here, a decomposition goes through ``records.validate_decomposition`` (one sub-question per gold
chunk, dependencies in range and acyclic) and words through alignment, like every teacher's.

Lenient where the meaning is unambiguous (a numeric string for a number, ``"[2]"`` or the title
for a paragraph, a list of words for a string), strict elsewhere: a reply we would have to guess
about is a reject with a fixed ``reason`` and a ``detail`` quoting the offending part.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from efficientrag.llm.errors import LLMOutputError
from efficientrag.llm.json_output import parse_json_output
from efficientrag.synth.records import Reject, SubQuestion
from efficientrag.text.normalize import dedup_key
from efficientrag.text.words import split_words

R_NO_JSON = "LLM reply is not JSON"
R_SHAPE = "LLM reply has a wrong structure"
R_DOCUMENT = "LLM reply names an unknown paragraph"
R_TRUNCATED = "LLM reply truncated"

DECOMPOSE_KEY = "decomposed_questions"
WORDS_KEY = "extracted_words"
QUERY_KEY = "filtered_query"

_NUMBER = re.compile(r"^\s*(?:#|\[)?\s*(\d+)\s*\]?\s*$")
_PARAGRAPH = re.compile(r"^\s*(?:paragraph|document|doc|passage)\s*#?\s*\[?(\d+)\]?\s*$", re.I)


def reply_object(text: str, key: str) -> dict[str, Any]:
    """The JSON object of a reply, which must hold ``key``."""
    try:
        return parse_json_output(text, [key], expect=dict)
    except LLMOutputError as exc:
        reason = R_SHAPE if exc.reason.startswith("missing key") else R_NO_JSON
        raise Reject(reason, f"{exc.reason}; reply: {_snippet(text)}") from None


def parse_decomposition(text: str, paragraphs: Sequence[tuple[str, str]]) -> list[SubQuestion]:
    """Sub-questions from a ``decomposed_questions`` reply. ``paragraphs`` are the (chunk id,
    title) of the paragraphs in the order the prompt numbered them."""
    value = reply_object(text, DECOMPOSE_KEY)[DECOMPOSE_KEY]
    if isinstance(value, Mapping):
        entries = []
        for key, item in value.items():
            idx = _as_int(key)
            if idx is None:
                raise Reject(R_SHAPE, f"{DECOMPOSE_KEY} key {key!r} is not a sub-question number")
            entries.append((idx, item))
    elif isinstance(value, list):
        entries = list(enumerate(value, start=1))
    else:
        raise Reject(R_SHAPE, f"{DECOMPOSE_KEY} is {_kind(value)}, expected an object")
    if not entries:
        raise Reject(R_SHAPE, f"{DECOMPOSE_KEY} is empty")
    return [_sub_question(idx, item, paragraphs) for idx, item in sorted(entries, key=lambda e: e[0])]


def _sub_question(idx: int, item: Any, paragraphs: Sequence[tuple[str, str]]) -> SubQuestion:
    where = f"sub-question {idx}"
    if not isinstance(item, Mapping):
        raise Reject(R_SHAPE, f"{where} is {_kind(item)}, expected an object")
    for key in ("sub_question", "answer", "document"):
        if key not in item:
            raise Reject(R_SHAPE, f"{where} has no {key!r}")
    text = item["sub_question"]
    if not isinstance(text, str):
        raise Reject(R_SHAPE, f"{where}: 'sub_question' is {_kind(text)}")
    answer, parts = _answer(item["answer"], where)
    return SubQuestion(
        idx=idx,
        sub_question=text.strip(),
        answer=answer,
        dependency=_dependency(item.get("dependency"), where),
        chunk_id=_document(item["document"], paragraphs, where),
        answer_parts=parts,
    )


def _answer(value: Any, where: str) -> tuple[str, list[str]]:
    """A string; or a list of strings, when one paragraph answers several facts (2Wiki)."""
    if isinstance(value, str):
        return value.strip(), []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value), []
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        parts = [v.strip() for v in value]
        return (parts[0], []) if len(parts) == 1 else (" and ".join(parts), parts)
    raise Reject(R_SHAPE, f"{where}: 'answer' is {_kind(value)}")


def _dependency(value: Any, where: str) -> list[int]:
    if value is None or value == "":
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        n = _as_int(v)
        if n is None:
            raise Reject(R_SHAPE, f"{where}: 'dependency' holds {v!r}, expected sub-question numbers")
        out.append(n)
    return sorted(set(out))


def _document(value: Any, paragraphs: Sequence[tuple[str, str]], where: str) -> str:
    n = _as_int(value)
    if n is None and isinstance(value, str):
        m = _PARAGRAPH.match(value)
        if m:
            n = int(m.group(1))
        else:
            titled = [cid for cid, title in paragraphs if title and dedup_key(title) == dedup_key(value)]
            if len(titled) == 1:
                return titled[0]
    if n is None:
        raise Reject(R_DOCUMENT, f"{where}: 'document' is {value!r}")
    if not 1 <= n <= len(paragraphs):
        raise Reject(R_DOCUMENT, f"{where}: paragraph {n} of {len(paragraphs)}")
    return paragraphs[n - 1][0]


def parse_extracted_words(text: str) -> list[str]:
    """The ``extracted_words`` of a label reply, as words (a string is split like chunk text)."""
    value = reply_object(text, WORDS_KEY)[WORDS_KEY]
    if isinstance(value, str):
        return split_words(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    raise Reject(R_SHAPE, f"{WORDS_KEY!r} is {_kind(value)}, expected a string")


def parse_filtered_query(text: str) -> str:
    """The ``filtered_query`` of a next-hop reply."""
    value = reply_object(text, QUERY_KEY)[QUERY_KEY]
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(v.strip() for v in value if v.strip())
    raise Reject(R_SHAPE, f"{QUERY_KEY!r} is {_kind(value)}, expected a string")


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _NUMBER.match(value)
        if m:
            return int(m.group(1))
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {str(value)[:60]!r}"


def _snippet(text: str | None, limit: int = 160) -> str:
    flat = " ".join((text or "").split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")
