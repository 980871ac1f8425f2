"""What one LLM call returns, in a form that is the same for chat, completions and the cache.

Plain dataclasses with ``to_dict``/``from_dict`` so a response can be stored in the on-disk cache
as JSON and come back identical (apart from the ``cached`` flag).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the server's top alternatives (token -> logprob)."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LLMResponse:
    text: str
    finish_reason: str | None
    usage: TokenUsage
    cached: bool = False
    logprobs: list[TokenLogprob] | None = None
    model: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for the cache (without ``cached``, which describes one retrieval)."""
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "logprobs": None
            if self.logprobs is None
            else [[t.token, t.logprob, t.top] for t in self.logprobs],
            "model": self.model,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool = False) -> LLMResponse:
        usage = data.get("usage") or {}
        raw_lps = data.get("logprobs")
        logprobs = None
        if raw_lps is not None:
            logprobs = [
                TokenLogprob(str(tok), float(lp), {str(k): float(v) for k, v in (top or {}).items()})
                for tok, lp, top in raw_lps
            ]
        return cls(
            text=str(data["text"]),
            finish_reason=data.get("finish_reason"),
            usage=TokenUsage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            cached=cached,
            logprobs=logprobs,
            model=data.get("model"),
        )
