"""Settings of the OpenAI-compatible client (loaded with :func:`efficientrag.config.load_config`).

The key normally comes from an environment variable (``api_key_env``); ``api_key`` exists for
programmatic use and is kept out of reprs and of :meth:`LLMConfig.to_public_dict`, which is what
should be saved next to outputs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from efficientrag.llm.errors import LLMConfigError
from efficientrag.setting_fields import SPEED_ONLY, bounded, check_settings, setting

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers (vLLM, Ollama, llama.cpp) accept any key; the SDK insists on a non-empty one.
LOCAL_DUMMY_KEY = "EMPTY"
SECRET_FIELDS = ("api_key",)


@dataclass
class ModelPrice:
    """USD per one million tokens.

    Attributes:
        prompt: USD per million prompt (input) tokens.
        completion: USD per million completion (output) tokens.
    """

    prompt: float = 0.0
    completion: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What a call with these token counts cost.

        Args:
            prompt_tokens: Prompt tokens.
            completion_tokens: Completion tokens.

        Returns:
            USD.
        """
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000


@dataclass
class LLMConfig:
    """How to reach one OpenAI-compatible endpoint, and how patiently (the ``llm:`` section).

    Attributes:
        base_url: The endpoint (None: env ``OPENAI_BASE_URL``, else OpenAI's).
        model: The model name as the server knows it (required to build a client).
        api_key_env: The environment variable the key is read from.
        api_key: A key given directly (overrides the variable); never shown or saved.
        concurrency: Requests in flight at once, per client.
        max_retries: Retries after the first attempt for 429, 5xx, timeouts, dropped connections
            and unparseable bodies.
        unreachable_retries: Short retries (0.5 s apart) when the endpoint cannot be reached at all.
        backoff_base: Seconds; retry i waits about ``backoff_base * 2**i`` (with jitter).
        backoff_max: Seconds; the cap on that wait.
        max_retry_after: Seconds; a server's ``Retry-After`` is honoured up to this.
        timeout: Seconds per HTTP request (connect, read and write each).
        temperature: The default sampling temperature.
        max_tokens: The default reply length limit (None: the server's default).
        seed: Sent as the sampling seed (None: none sent).
        cache_dir: Folder of the persistent response cache (None: no caching).
        prices: Model name -> price, for cost accounting (models without one cost 0 and are flagged).
        extra_body: Extra JSON fields sent with every request (e.g. vLLM's ``top_k``).
    """

    # None: env OPENAI_BASE_URL, else OpenAI's own endpoint.
    base_url: str | None = None
    # Model name as the server knows it; required (empty fails when a client is built).
    model: str = ""
    # Env var the key is read from when the client is built.
    api_key_env: str = setting("OPENAI_API_KEY", roles=[SPEED_ONLY])
    # Overrides the env var; never shown in repr, logs, caches or saved configs.
    api_key: str | None = field(default=None, repr=False, metadata={"secret": True})
    # Requests in flight at once (per client).
    concurrency: int = bounded(16, low=1, roles=[SPEED_ONLY])
    # Retries after the first attempt for 429, 5xx, timeouts, dropped connections, unparseable bodies.
    max_retries: int = bounded(6, low=0, roles=[SPEED_ONLY])
    # Short retries (0.5 s apart) when the endpoint cannot be reached at all (connection refused,
    # unknown host) before EndpointUnreachableError: long enough for a server that is starting.
    unreachable_retries: int = bounded(1, low=0, roles=[SPEED_ONLY])
    # Backoff before retry i is about backoff_base * 2**i seconds (with jitter), capped at backoff_max.
    backoff_base: float = bounded(1.0, low=0.0, roles=[SPEED_ONLY])
    backoff_max: float = bounded(60.0, low=0.0, roles=[SPEED_ONLY])
    # A server's Retry-After is honoured up to this many seconds.
    max_retry_after: float = bounded(300.0, low=0.0, roles=[SPEED_ONLY])
    # Seconds per HTTP request (connect, read, write each).
    timeout: float = bounded(60.0, above=0.0, roles=[SPEED_ONLY])
    temperature: float = 0.0
    # None: the server's default (for the completions endpoint that is often only 16 tokens).
    max_tokens: int | None = bounded(None, low=1)
    seed: int | None = None
    # Folder of the persistent response cache; None disables caching.
    cache_dir: str | None = setting(None, roles=[SPEED_ONLY])
    # Model name -> price, for cost accounting. Models without a price cost 0 and are flagged.
    prices: dict[str, ModelPrice] = setting(default_factory=dict, roles=[SPEED_ONLY])
    # Sent with every request as extra JSON fields (e.g. vLLM's top_k, repetition_penalty).
    extra_body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_settings(self)

    def resolved_base_url(self) -> str:
        """The endpoint to call: ``base_url``, else env ``OPENAI_BASE_URL``, else OpenAI's.

        Returns:
            The URL without a trailing slash.
        """
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
        return url.rstrip("/")

    def resolved_api_key(self) -> str:
        """The key to send: config, then env var, then a dummy for servers that are not OpenAI's.

        Returns:
            The API key.

        Raises:
            LLMConfigError: No key is set and the endpoint is OpenAI's.
        """
        if self.api_key:
            return self.api_key
        from_env = os.environ.get(self.api_key_env) if self.api_key_env else None
        if from_env:
            return from_env
        base_url = self.resolved_base_url()
        if is_openai_url(base_url):
            raise LLMConfigError(
                f"no API key for {base_url}: set the environment variable {self.api_key_env!r} "
                "(or point base_url at a local OpenAI-compatible server)"
            )
        return LOCAL_DUMMY_KEY

    def to_public_dict(self) -> dict[str, Any]:
        """Everything except secrets: safe to log, save next to outputs, or hash.

        Returns:
            The settings as plain data, without ``api_key``.
        """
        from efficientrag.config_values import to_dict

        out = to_dict(self)
        for name in SECRET_FIELDS:
            out.pop(name, None)
        return out


def is_openai_url(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(".openai.com")
