"""Errors of the LLM layer, split by what the caller should do about them.

- :class:`LLMConfigError`: fix the configuration or environment (missing key, bad argument).
- :class:`LLMRequestError` / :class:`LLMAuthError`: the server refused the request (4xx); retrying the
  same request cannot help.
- :class:`EndpointUnreachableError`: nothing answers at the base URL (connection refused, unknown
  host); every further request would fail the same way, so a run should stop rather than go on.
- :class:`RetriesExhaustedError`: transient failures (429, 5xx, timeouts, unparseable bodies) outlasted
  the retry budget; a later re-run may succeed.
- :class:`TruncatedOutputError`: the reply hit the token limit; it carries the partial reply.
- :class:`LLMOutputError`: the reply arrived but is not what the caller asked for (no JSON, missing
  key); ``reason`` is short and stable enough to be written to a rejects file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.errors import EfficientRAGError

if TYPE_CHECKING:
    from efficientrag.llm.response import LLMResponse


class LLMError(EfficientRAGError, RuntimeError):
    """Base class of every error raised by :mod:`efficientrag.llm`."""


class LLMConfigError(LLMError, ValueError):
    """The client cannot be used as configured; the message says which setting to change."""


class LLMRequestError(LLMError):
    """The server rejected the request with a status that retrying will not change (a 4xx).

    ``kind`` is one of ``bad_request``, ``auth``, ``permission``, ``not_found``, ``client_error``.

    Args:
        message: What failed, naming the endpoint and model.
        kind: The failure's kind (above).
        status: The HTTP status, when there was one.
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class LLMAuthError(LLMRequestError):
    """HTTP 401: the key is missing or wrong. The message names the env var, never the key.

    Args:
        message: What to do, naming the key's environment variable.
        kind: ``"auth"``.
        status: The HTTP status (401).
    """


class EndpointUnreachableError(LLMError):
    """No connection could be opened to ``base_url``; the message names it and the reason.

    Args:
        message: What failed and why.
        base_url: The endpoint that could not be reached.
    """

    def __init__(self, message: str, *, base_url: str) -> None:
        super().__init__(message)
        self.base_url = base_url


class RetriesExhaustedError(LLMError):
    """Every attempt failed with a transient error; ``kind`` is the last failure's kind.

    Args:
        message: What failed, with the last error.
        kind: The last failure's kind (``rate_limit``, ``server_error``, ``timeout`` ...).
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, *, kind: str, attempts: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


class MalformedResponseError(LLMError):
    """The server answered 200 but the body is not a usable completion (retried like a 5xx)."""


class TruncatedOutputError(LLMError):
    """The reply stopped at the token limit (``finish_reason == "length"``).

    Pass ``allow_truncated=True`` where a cut reply is wanted (FLARE's look-ahead). ``response``
    holds the partial reply, so a caller can still log or inspect it.

    Args:
        message: What happened and how to allow it.
        response: The partial reply.
    """

    def __init__(self, message: str, *, response: LLMResponse) -> None:
        super().__init__(message)
        self.response = response


class LLMOutputError(LLMError, ValueError):
    """A reply that does not have the expected structure.

    ``reason`` is a short description meant for machines and rejects files ("no JSON object found",
    "missing key 'answer'"); ``text`` is the raw reply it was raised for.

    Args:
        reason: The short description (also the message).
        text: The raw reply.
    """

    def __init__(self, reason: str, *, text: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.text = text
