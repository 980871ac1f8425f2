"""Responders: what the fake OpenAI server answers, scripted by a test.

A responder is any callable from a request body to a reply (a string, or a
:class:`~efficientrag.testing.fake_completions.ScriptedReply` with its own tokens, log-probabilities
or finish reason). These build the common ones: an echo (any call succeeds), a fixed queue of
replies (a test's exact script), and regex rules on the question.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from efficientrag.testing.fake_completions import ScriptedReply, request_text

Responder = Callable[[dict[str, Any]], "str | ScriptedReply"]


def echo_responder(request: dict[str, Any]) -> str:
    """The default responder: answers ``"echo: "`` plus the request's text, so any call succeeds.

    Args:
        request: The request body (chat or completions).

    Returns:
        ``"echo: "`` + the last user message (or the prompt).
    """
    return f"echo: {request_text(request)}"


class QueueResponder:
    """Replies in order, one per request; when the queue is empty, ``then`` answers (or an error)."""

    def __init__(self, replies: Iterable[str | ScriptedReply], *, then: Responder | None = None) -> None:
        self._replies = list(replies)
        self._then = then
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def __call__(self, request: dict[str, Any]) -> str | ScriptedReply:
        with self._lock:
            if self._replies:
                return self._replies.pop(0)
        if self._then is None:
            raise LookupError("scripted reply queue is exhausted")
        return self._then(request)


def queue_responder(
    replies: Iterable[str | ScriptedReply], *, then: Responder | None = None
) -> QueueResponder:
    """A responder that answers with ``replies`` in order, one per request (a test's exact script).

    Args:
        replies: The replies, in request order.
        then: Answers once the queue is empty (None: an exhausted queue answers 400).

    Returns:
        The responder; its ``remaining`` says how many replies are left.
    """
    return QueueResponder(replies, then=then)


RuleReply = str | ScriptedReply | Callable[[re.Match, dict[str, Any]], "str | ScriptedReply"]


def rule_responder(
    rules: Sequence[tuple[str | re.Pattern, RuleReply]], *, default: Responder = echo_responder
) -> Responder:
    """First rule whose regex is found in the last user message (or prompt) answers; a callable
    reply gets the match and the request.

    Args:
        rules: ``(regex, reply)`` pairs, tried in order; a reply is a string, a
            :class:`ScriptedReply`, or a callable ``(match, request) -> reply``.
        default: Answers when no rule matches.

    Returns:
        The responder.
    """
    compiled = [(re.compile(p, re.S) if isinstance(p, str) else p, reply) for p, reply in rules]

    def respond(request: dict[str, Any]) -> str | ScriptedReply:
        text = request_text(request)
        for pattern, reply in compiled:
            match = pattern.search(text)
            if match:
                return reply(match, request) if callable(reply) else reply
        return default(request)

    return respond
