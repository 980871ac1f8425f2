"""LLM access: an OpenAI-compatible async client with retries, an on-disk cache, usage accounting,
and a tolerant JSON-output parser.

Names are imported lazily, so ``from efficientrag.llm import parse_json_output`` (or the cache, in
a worker process) does not pay for importing the ``openai`` SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from efficientrag.llm.async_client import AsyncLLMClient
    from efficientrag.llm.cache import ResponseCache, cache_key
    from efficientrag.llm.client import LLMClient
    from efficientrag.llm.config import LLMConfig, ModelPrice
    from efficientrag.llm.errors import (
        EndpointUnreachableError,
        LLMAuthError,
        LLMConfigError,
        LLMError,
        LLMOutputError,
        LLMRequestError,
        MalformedResponseError,
        RetriesExhaustedError,
        TruncatedOutputError,
    )
    from efficientrag.llm.json_output import parse_json_output
    from efficientrag.llm.response import LLMResponse, TokenLogprob, TokenUsage
    from efficientrag.llm.retry import parse_retry_after
    from efficientrag.llm.usage import StageUsage, UsageTracker

_EXPORTS = by_module(
    __name__,
    {
        "async_client": ("AsyncLLMClient",),
        "client": ("LLMClient",),
        "retry": ("parse_retry_after",),
        "cache": ("ResponseCache", "cache_key"),
        "config": ("LLMConfig", "ModelPrice"),
        "errors": (
            "EndpointUnreachableError",
            "LLMAuthError",
            "LLMConfigError",
            "LLMError",
            "LLMOutputError",
            "LLMRequestError",
            "MalformedResponseError",
            "RetriesExhaustedError",
            "TruncatedOutputError",
        ),
        "json_output": ("parse_json_output",),
        "response": ("LLMResponse", "TokenLogprob", "TokenUsage"),
        "usage": ("StageUsage", "UsageTracker"),
    },
)

__all__ = [
    "AsyncLLMClient",
    "EndpointUnreachableError",
    "LLMAuthError",
    "LLMClient",
    "LLMConfig",
    "LLMConfigError",
    "LLMError",
    "LLMOutputError",
    "LLMRequestError",
    "LLMResponse",
    "MalformedResponseError",
    "ModelPrice",
    "ResponseCache",
    "RetriesExhaustedError",
    "StageUsage",
    "TokenLogprob",
    "TokenUsage",
    "TruncatedOutputError",
    "UsageTracker",
    "cache_key",
    "parse_json_output",
    "parse_retry_after",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
