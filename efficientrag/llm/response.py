"""What one LLM call returns, in a form that is the same for chat, completions and the cache.

Plain dataclasses with ``to_dict``/``from_dict`` so a response can be stored in the on-disk cache
as JSON and come back identical (apart from the ``cached`` flag); :func:`parse_response` reads
them from an endpoint's JSON body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TokenUsage:
    """Tokens one call used, as the server reported them.

    Attributes:
        prompt_tokens: Tokens of the prompt (input).
        completion_tokens: Tokens of the reply (output).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the server's top alternatives (token -> logprob).

    Attributes:
        token: The token's text.
        logprob: Its natural-log probability.
        top: The top alternatives at its position, token -> log-probability.
    """

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LLMResponse:
    """What one chat or completion call returned, the same for both endpoints and the cache.

    Attributes:
        text: The reply text.
        finish_reason: Why generation stopped (``"stop"``, ``"length"`` ...), as the server says.
        usage: The tokens used.
        cached: Whether it came from the response cache (no call was made).
        logprobs: Per-token log-probabilities, when asked for.
        model: The model name the server reported.
    """

    text: str
    finish_reason: str | None
    usage: TokenUsage
    cached: bool = False
    logprobs: list[TokenLogprob] | None = None
    model: str | None = None

    @property
    def truncated(self) -> bool:
        """Whether the reply stopped at the token limit."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for the cache (without ``cached``, which describes one retrieval).

        Returns:
            ``text``, ``finish_reason``, ``usage``, ``logprobs`` (``[token, logprob, top]`` rows)
            and ``model``.
        """
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
        """Read back what :meth:`to_dict` wrote.

        Args:
            data: The dict.
            cached: The ``cached`` flag to set (True for a cache hit).

        Returns:
            The response.

        Raises:
            KeyError: ``text`` is missing.
        """
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
