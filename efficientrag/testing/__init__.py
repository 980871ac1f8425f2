"""Test doubles that ship with the package, so users' own tests and benchmarks can use them too.

Imported lazily: ``python -m efficientrag.testing.fake_openai`` must not find its own module
already imported by this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports

__all__ = ["FakeOpenAIServer", "ScriptedReply", "echo_responder", "queue_responder", "rule_responder"]

if TYPE_CHECKING:
    from efficientrag.testing.fake_completions import ScriptedReply
    from efficientrag.testing.fake_openai import FakeOpenAIServer
    from efficientrag.testing.fake_responders import echo_responder, queue_responder, rule_responder


_EXPORTS = by_module(
    __name__,
    {
        "fake_openai": ("FakeOpenAIServer",),
        "fake_completions": ("ScriptedReply",),
        "fake_responders": ("echo_responder", "queue_responder", "rule_responder"),
    },
)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
