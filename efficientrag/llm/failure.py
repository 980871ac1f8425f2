"""What a failed request was, in this package's terms, and what the caller is told about it.

The SDK raises its own error classes; :func:`classify_error` names each failure with the kind the
retry policy (:mod:`efficientrag.llm.retry`) and the usage counters use, and :func:`request_error`
turns a failure that is not retried into this package's error, with a message that says what to do
and never quotes the API key. Kept apart from the client so the retry loop reads as a loop.
"""

from __future__ import annotations

import openai

from efficientrag.llm.errors import LLMAuthError, LLMRequestError, MalformedResponseError
from efficientrag.llm.response import LLMResponse
from efficientrag.llm.retry import parse_retry_after, unreachable_reason


def classify_error(exc: Exception) -> tuple[str, float | None]:
    """The kind of a failed request, and the delay the server asked for.

    Args:
        exc: What the SDK (or the response parser) raised.

    Returns:
        ``(error kind, server-requested delay in seconds or None)``; the kinds in
        :data:`~efficientrag.llm.retry.RETRYABLE` are worth another try.
    """
    if isinstance(exc, MalformedResponseError | openai.APIResponseValidationError):
        return "malformed", None
    if isinstance(exc, openai.APITimeoutError):
        return "timeout", None
    if isinstance(exc, openai.APIConnectionError):
        return ("unreachable" if unreachable_reason(exc) else "connection"), None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = parse_retry_after(exc.response.headers)
        if status == 429:
            return "rate_limit", retry_after
        if status >= 500:
            return "server_error", retry_after
        if status == 408:
            return "timeout", retry_after
        if status == 401:
            return "auth", None
        if status == 403:
            return "permission", None
        if status == 404:
            return "not_found", None
        if status in (400, 422):
            return "bad_request", None
        return "client_error", None
    return "client_error", None


def request_error(
    exc: Exception, kind: str, *, base_url: str, model: str, api_key_env: str, api_key: str | None
) -> LLMRequestError:
    """The error raised for a failure that is not retried.

    Args:
        exc: What the SDK raised.
        kind: Its kind (:func:`classify_error`).
        base_url: The endpoint, named in the message.
        model: The model, named in the message.
        api_key_env: The environment variable the key is read from, named for a rejected key.
        api_key: The key, redacted wherever the server's text quotes it.

    Returns:
        :class:`~efficientrag.llm.errors.LLMAuthError` for a rejected key, else
        :class:`~efficientrag.llm.errors.LLMRequestError`.
    """
    status = getattr(exc, "status_code", None)
    if kind == "auth":
        # The server's text may echo part of the key; say only what to do.
        return LLMAuthError(
            f"HTTP 401 from {base_url}: the API key was rejected. Set a valid key in the "
            f"environment variable {api_key_env!r}.",
            kind=kind,
            status=status,
        )
    return LLMRequestError(
        f"HTTP {status} ({kind}) from {base_url} for model {model!r}: {describe_error(exc, api_key)}",
        kind=kind,
        status=status,
    )


def describe_error(exc: Exception, api_key: str | None) -> str:
    """The error's message, the key redacted, at most 500 characters.

    Args:
        exc: The error.
        api_key: The key to redact.

    Returns:
        The message.
    """
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return redact(str(message), api_key)[:500]


def redact(text: str, api_key: str | None) -> str:
    """``text`` with the key replaced by ``<redacted>`` (keys under 8 characters are left alone).

    Args:
        text: A message that may quote the key.
        api_key: The key.

    Returns:
        The text, redacted.
    """
    return text.replace(api_key, "<redacted>") if api_key and len(api_key) >= 8 else text


def truncated_message(response: LLMResponse) -> str:
    """The message of the error raised for a reply cut at the token limit.

    Args:
        response: The cut reply.

    Returns:
        The message.
    """
    return (
        f"reply stopped at the token limit after {response.usage.completion_tokens} tokens "
        "(raise max_tokens, or pass allow_truncated=True if a cut reply is wanted)"
    )
