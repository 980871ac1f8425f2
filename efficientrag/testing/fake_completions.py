"""The fake server's "model": a scripted reply turned into the JSON body OpenAI would send.

Replies are split into whitespace-led tokens with deterministic log-probabilities, so a test can
predict every number the client reads; stop sequences and ``max_tokens`` cut them as a server
would. The responders (:mod:`efficientrag.testing.fake_responders`) say what to answer; the server
(:mod:`efficientrag.testing.fake_openai`) sends what this module builds.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_TOKEN_RE = re.compile(r"\s*\S+|\s+")


@dataclass
class ScriptedReply:
    """A scripted answer. ``token_logprobs`` (token, logprob) pairs must join to ``text``; without
    them the text is split into whitespace-led tokens with deterministic logprobs. Token counts
    default to those tokens (the prompt: the tokens of every message).

    Attributes:
        text: The reply.
        token_logprobs: ``(token, logprob)`` pairs that join to ``text`` (None: made up).
        finish_reason: The reported finish reason (``"length"`` makes the client see a cut reply).
        prompt_tokens: The reported prompt tokens (None: counted from the request).
        completion_tokens: The reported completion tokens (None: counted from the reply).
    """

    text: str
    token_logprobs: Sequence[tuple[str, float]] | None = None
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def tokenize(text: str) -> list[str]:
    """Whitespace-led tokens (" Paris"); ``"".join(tokenize(t)) == t``."""
    return _TOKEN_RE.findall(text)


def fake_logprob(token: str) -> float:
    """A deterministic logprob in (-3, 0] for a token, so tests can predict it."""
    digest = hashlib.sha256(token.encode("utf-8")).digest()
    return -(int.from_bytes(digest[:4], "big") % 3000) / 1000.0


def content_text(content: Any) -> str:
    """Text of a message content: a string, or a list of parts ({"type": "text", "text": ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def request_text(request: dict[str, Any]) -> str:
    """The last user message of a chat request, or the prompt of a completions request."""
    if "messages" in request:
        for msg in reversed(request.get("messages") or []):
            if isinstance(msg, dict) and msg.get("role") == "user":
                return content_text(msg.get("content"))
        return ""
    prompt = request.get("prompt", "")
    if isinstance(prompt, list):
        prompt = prompt[0] if prompt and isinstance(prompt[0], str) else ""
    return prompt if isinstance(prompt, str) else ""


def prompt_token_count(request: dict[str, Any]) -> int:
    if "messages" in request:
        return sum(
            len(tokenize(content_text(m.get("content"))))
            for m in request.get("messages") or []
            if isinstance(m, dict)
        )
    return len(tokenize(request_text(request)))


def completion_json(
    reply: str | ScriptedReply,
    endpoint: str,
    request: dict[str, Any],
    index: int,
    *,
    default_model: str,
    truncate: bool = False,
) -> dict[str, Any]:
    """The OpenAI JSON body answering one request with ``reply`` (stop sequences and
    ``max_tokens`` applied).

    Args:
        reply: The responder's reply.
        endpoint: ``"chat"`` or ``"completions"``.
        request: The request body.
        index: The request's number (in the response id).
        default_model: The model reported when the request names none.
        truncate: Cut the reply to half its tokens with ``finish_reason="length"``.

    Returns:
        A ``chat.completion`` or ``text_completion`` object, usage and (when asked) logprobs included.

    Raises:
        ValueError: A scripted reply's tokens do not join to its text.
    """
    if isinstance(reply, str):
        reply = ScriptedReply(reply)
    tokens, lps = _reply_tokens(reply)
    finish = reply.finish_reason
    tokens, lps, finish = _apply_stop(tokens, lps, finish, request.get("stop"))
    limit = request.get("max_tokens") or request.get("max_completion_tokens")
    if isinstance(limit, int) and len(tokens) > limit:
        tokens, lps, finish = tokens[:limit], lps[:limit], "length"
    if truncate:
        keep = max(1, len(tokens) // 2) if len(tokens) > 1 else 0
        tokens, lps, finish = tokens[:keep], lps[:keep], "length"
    text = "".join(tokens)
    prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_token_count(request)
    completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else len(tokens)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    model = request.get("model") or default_model
    created = int(time.time())
    if endpoint == "chat":
        logprobs = None
        if request.get("logprobs"):
            logprobs = _chat_logprobs(tokens, lps, int(request.get("top_logprobs") or 0))
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "logprobs": logprobs,
            "finish_reason": finish,
        }
        return {
            "id": f"chatcmpl-fake-{index}",
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [choice],
            "usage": usage,
        }
    logprobs = None
    if request.get("logprobs") is not None:
        k = max(1, int(request["logprobs"]))
        logprobs = _text_logprobs(tokens, lps, k, start=len(request_text(request)))
    return {
        "id": f"cmpl-fake-{index}",
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}],
        "usage": usage,
    }


def _reply_tokens(reply: ScriptedReply) -> tuple[list[str], list[float]]:
    """The reply's tokens and their logprobs: the scripted ones, or made up from its text."""
    if reply.token_logprobs is not None:
        tokens = [str(t) for t, _ in reply.token_logprobs]
        lps = [float(lp) for _, lp in reply.token_logprobs]
        if "".join(tokens) != reply.text:
            raise ValueError("ScriptedReply.token_logprobs tokens do not join to its text")
        return tokens, lps
    tokens = tokenize(reply.text)
    return tokens, [fake_logprob(t) for t in tokens]


def _chat_logprobs(tokens: list[str], lps: list[float], k: int) -> dict[str, Any]:
    """A chat choice's ``logprobs``: per token, its bytes and ``k`` alternatives."""
    return {
        "content": [
            {
                "token": t,
                "logprob": lp,
                "bytes": list(t.encode("utf-8")),
                "top_logprobs": [
                    {"token": at, "logprob": alp, "bytes": list(at.encode("utf-8"))}
                    for at, alp in _alternatives(t, lp, k)
                ],
            }
            for t, lp in zip(tokens, lps, strict=True)
        ],
        "refusal": None,
    }


def _text_logprobs(tokens: list[str], lps: list[float], k: int, *, start: int) -> dict[str, Any]:
    """A text completion's ``logprobs``: tokens, logprobs, ``k`` alternatives and character
    offsets, which count on from ``start`` (the prompt's length)."""
    offsets, pos = [], start
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    return {
        "tokens": tokens,
        "token_logprobs": lps,
        "top_logprobs": [dict(_alternatives(t, lp, k)) for t, lp in zip(tokens, lps, strict=True)],
        "text_offset": offsets,
    }


def _alternatives(token: str, logprob: float, k: int) -> list[tuple[str, float]]:
    """The chosen token first, then ``k - 1`` made-up, less likely alternatives."""
    if k <= 0:
        return []
    return [(token, logprob)] + [(f"{token}~{i}", round(logprob - 0.5 - i, 3)) for i in range(1, k)]


def _apply_stop(
    tokens: list[str], lps: list[float], finish: str, stop: Any
) -> tuple[list[str], list[float], str]:
    stops = [stop] if isinstance(stop, str) else [s for s in (stop or []) if isinstance(s, str) and s]
    if not stops:
        return tokens, lps, finish
    text = "".join(tokens)
    hits = [i for i in (text.find(s) for s in stops) if i >= 0]
    if not hits:
        return tokens, lps, finish
    cut = min(hits)
    kept, length = 0, 0
    while kept < len(tokens) and length + len(tokens[kept]) <= cut:
        length += len(tokens[kept])
        kept += 1
    return tokens[:kept], lps[:kept], "stop"
