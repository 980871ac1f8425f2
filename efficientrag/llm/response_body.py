"""An endpoint's JSON body read into an :class:`~efficientrag.llm.response.LLMResponse`.

Apart from the response record because reading a body can fail (:class:`MalformedResponseError`,
retried like a 5xx): the errors module names the record a truncated reply carries, so the record
itself must not need the errors.
"""

from __future__ import annotations

from typing import Any

from efficientrag.errors import InvalidArgumentError, WrongTypeError
from efficientrag.llm.errors import MalformedResponseError
from efficientrag.llm.response import LLMResponse, TokenLogprob, TokenUsage


def parse_response(kind: str, body: Any) -> LLMResponse:
    try:
        choice = body["choices"][0]
        usage_raw = body.get("usage") or {}
        usage = TokenUsage(
            int(usage_raw.get("prompt_tokens") or 0), int(usage_raw.get("completion_tokens") or 0)
        )
        if kind == "chat":
            message = choice["message"]
            text = message.get("content") or ""
            logprobs = _chat_logprobs(choice.get("logprobs"))
        else:
            text = choice["text"]
            logprobs = _completion_logprobs(choice.get("logprobs"))
        if not isinstance(text, str):
            raise WrongTypeError(f"text is {type(text).__name__}")
        return LLMResponse(
            text=text,
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            logprobs=logprobs,
            model=body.get("model"),
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedResponseError(
            f"response is not a {kind} completion ({type(exc).__name__}: {exc})"
        ) from exc


def _chat_logprobs(raw: Any) -> list[TokenLogprob] | None:
    if not raw or raw.get("content") is None:
        return None
    out = []
    for item in raw["content"]:
        top = {str(t["token"]): float(t["logprob"]) for t in item.get("top_logprobs") or []}
        out.append(TokenLogprob(str(item["token"]), float(item["logprob"]), top))
    return out


def _completion_logprobs(raw: Any) -> list[TokenLogprob] | None:
    if not raw or raw.get("tokens") is None:
        return None
    tokens = raw["tokens"]
    values = raw.get("token_logprobs") or []
    tops = raw.get("top_logprobs") or [None] * len(tokens)
    if len(values) != len(tokens) or len(tops) != len(tokens):
        raise InvalidArgumentError("logprobs arrays have different lengths")
    out = []
    for tok, lp, top in zip(tokens, values, tops, strict=True):
        # The first token of an echoed prompt has no logprob; vLLM and OpenAI send null there.
        value = float("nan") if lp is None else float(lp)
        out.append(TokenLogprob(str(tok), value, {str(k): float(v) for k, v in (top or {}).items()}))
    return out
