"""The body of one request, built and checked before anything is sent.

A bad argument (a mistyped parameter, ``n=2``, malformed messages) fails here, before any cache
lookup or HTTP call; what is built is canonical (the config's defaults filled in, sampling numbers
as floats), so the same request always gives the same cache key.
:class:`~efficientrag.llm.async_client.AsyncLLMClient` sends it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from efficientrag.llm.config import LLMConfig
from efficientrag.llm.errors import LLMConfigError

Messages = Sequence[Mapping[str, Any]]

# Sampling parameters sent as floats, so 0 and 0.0 give the same cache key.
FLOAT_PARAMS = ("temperature", "top_p", "frequency_penalty", "presence_penalty")


def sampling_params(
    cfg: LLMConfig,
    kind: str,
    stop: str | Sequence[str] | None,
    max_tokens: int | None,
    temperature: float | None,
    params: dict[str, Any],
) -> dict[str, Any]:
    """The sampling part of a request: ``cfg``'s defaults under the caller's values, None left out.

    Args:
        cfg: The client's settings (default temperature, max_tokens, seed).
        kind: ``"chat"`` or ``"completions"``, whose parameters ``params`` may name.
        stop: Stop sequence(s).
        max_tokens: Tokens to generate at most (None: ``cfg.max_tokens``).
        temperature: Sampling temperature (None: ``cfg.temperature``).
        params: Further OpenAI parameters.

    Returns:
        The request fields.

    Raises:
        LLMConfigError: ``n != 1``, ``stream=True``, or a parameter the endpoint does not have.
    """
    if params.get("n", 1) != 1 or params.get("stream"):
        raise LLMConfigError("n != 1 and stream=True are not supported by this client")
    unknown = sorted(set(params) - known_params(kind))
    if unknown:
        raise LLMConfigError(
            f"unknown {kind} parameter(s) {unknown}; server-specific fields go in extra_body"
        )
    out: dict[str, Any] = {
        "temperature": cfg.temperature if temperature is None else temperature,
        "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens,
        "seed": cfg.seed,
        "stop": [stop] if isinstance(stop, str) else (list(stop) if stop else None),
    }
    out.update(params)
    for name in FLOAT_PARAMS:
        if out.get(name) is not None:
            out[name] = float(out[name])
    return {k: v for k, v in out.items() if v is not None}


@functools.cache
def known_params(kind: str) -> frozenset[str]:
    """Parameter names the SDK's ``create()`` accepts for this endpoint (so typos fail early)."""
    from openai.resources.chat.completions import AsyncCompletions as Chat
    from openai.resources.completions import AsyncCompletions as Text

    create = Chat.create if kind == "chat" else Text.create
    skip = {"self", "model", "messages", "prompt", "extra_headers", "extra_query", "extra_body", "timeout"}
    return frozenset(set(inspect.signature(create).parameters) - skip)


def check_messages(messages: Messages) -> list[dict[str, Any]]:
    """Chat messages as plain dicts, each with a role and a content.

    Args:
        messages: ``{"role", "content"}`` mappings.

    Returns:
        Copies of them, as dicts.

    Raises:
        LLMConfigError: Not a non-empty list of such mappings.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise LLMConfigError("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or "role" not in msg or "content" not in msg:
            raise LLMConfigError(f"messages[{i}] must be a dict with 'role' and 'content', got {msg!r:.80}")
        out.append(dict(msg))
    return out
