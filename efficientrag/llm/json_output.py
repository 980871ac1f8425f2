"""Pull the JSON an LLM was asked for out of what it actually wrote.

Models wrap JSON in ```json fences, put prose around it, mention braces in that prose, and
sometimes write Python-style literals (single quotes, True/None) or trailing commas. The parser
walks the text for balanced top-level ``{...}`` (or ``[...]``) spans, respecting string literals,
and returns the first one that parses to the expected type. Failures raise
:class:`~efficientrag.llm.errors.LLMOutputError` with a short reason a rejects file can group by.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

from efficientrag.errors import WrongTypeError
from efficientrag.llm.errors import LLMOutputError

_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def parse_json_output(
    text: str | None,
    required_keys: Sequence[str] = (),
    *,
    expect: type[dict] | type[list] = dict,
) -> Any:
    """The first JSON object (``expect=dict``) or array (``expect=list``) in ``text``.

    ``required_keys`` are checked on an object; a missing one raises with reason "missing key 'k'".

    Args:
        text: The model's reply (code fences and chatter around the JSON are fine).
        required_keys: Keys the object must have.
        expect: ``dict`` for an object, ``list`` for an array.

    Returns:
        The parsed object or array.

    Raises:
        LLMOutputError: No such JSON value in the text, or a required key is missing; its
            ``reason`` is short and stable (for rejects files).
        TypeError: ``expect`` is neither ``dict`` nor ``list``.
    """
    if expect not in (dict, list):
        raise WrongTypeError(f"expect must be dict or list, got {expect!r}")
    what = "object" if expect is dict else "array"
    if text is None or not text.strip():
        raise LLMOutputError("empty output", text=text)
    opener = "{" if expect is dict else "["
    first_error: str | None = None
    pos = text.find(opener)
    while pos >= 0:
        end = _balanced_end(text, pos)
        if end is None:
            reason = f"unterminated JSON {what}"
            raise LLMOutputError(first_error or reason, text=text)
        candidate = text[pos:end]
        value, error = _parse_candidate(candidate)
        if error is None and isinstance(value, expect):
            _check_keys(value, required_keys, text)
            return value
        if first_error is None and error is not None:
            first_error = f"invalid JSON {what}: {error}"
        # A failed span is skipped whole: its inner objects are fragments, not answers.
        pos = text.find(opener, end)
    raise LLMOutputError(first_error or f"no JSON {what} found", text=text)


def _check_keys(value: Any, required_keys: Sequence[str], text: str) -> None:
    if not required_keys:
        return
    if not isinstance(value, dict):
        raise LLMOutputError("required keys need a JSON object", text=text)
    for key in required_keys:
        if key not in value:
            raise LLMOutputError(f"missing key {key!r}", text=text)


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes ``text[start]``, skipping string literals."""
    stack: list[str] = []
    closers = {"{": "}", "[": "]"}
    quote: str | None = None
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in ('"', "'"):
            # An apostrophe inside prose-like JSON ("it's") would open a bogus string; only treat
            # single quotes as delimiters where a Python-literal string can start.
            if ch == '"' or _opens_single_quoted(text, i):
                quote = ch
        elif ch in closers:
            stack.append(closers[ch])
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return None if not stack else i + 1
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return None


def _opens_single_quoted(text: str, i: int) -> bool:
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j >= 0 and text[j] in "{[,:"


def _parse_candidate(candidate: str) -> tuple[Any, str | None]:
    try:
        return json.loads(candidate), None
    except json.JSONDecodeError as exc:
        error = f"{exc.msg} at char {exc.pos}"
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    if repaired != candidate:
        try:
            return json.loads(repaired), None
        except json.JSONDecodeError:
            pass
    # Python-literal dicts ({'a': True, 'b': None}); literal_eval evaluates literals only, no code.
    try:
        value = ast.literal_eval(repaired)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, error
    if isinstance(value, (dict, list)) and _json_compatible(value):
        return value, None
    return None, error


def _json_compatible(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_compatible(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_compatible(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))
