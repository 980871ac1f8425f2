"""LLM access: an OpenAI-compatible async client with retries, an on-disk cache, usage accounting,
and a tolerant JSON-output parser.

Names are imported lazily, so ``from efficientrag.llm import parse_json_output`` (or the cache, in
a worker process) does not pay for importing the ``openai`` SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AsyncLLMClient": "client",
    "LLMClient": "client",
    "parse_retry_after": "client",
    "ResponseCache": "cache",
    "cache_key": "cache",
    "LLMConfig": "config",
    "ModelPrice": "config",
    "EndpointUnreachableError": "errors",
    "LLMAuthError": "errors",
    "LLMConfigError": "errors",
    "LLMError": "errors",
    "LLMOutputError": "errors",
    "LLMRequestError": "errors",
    "MalformedResponseError": "errors",
    "RetriesExhaustedError": "errors",
    "TruncatedOutputError": "errors",
    "parse_json_output": "json_output",
    "LLMResponse": "response",
    "TokenLogprob": "response",
    "TokenUsage": "response",
    "StageUsage": "usage",
    "UsageTracker": "usage",
}

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

if TYPE_CHECKING:
    from efficientrag.llm.cache import ResponseCache, cache_key
    from efficientrag.llm.client import AsyncLLMClient, LLMClient, parse_retry_after
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
    from efficientrag.llm.usage import StageUsage, UsageTracker


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'efficientrag.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"efficientrag.llm.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
