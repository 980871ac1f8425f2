"""Test doubles that ship with the package, so users' own tests and benchmarks can use them too.

Imported lazily: ``python -m efficientrag.testing.fake_openai`` must not find its own module
already imported by this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["FakeOpenAIServer", "ScriptedReply", "echo_responder", "queue_responder", "rule_responder"]

if TYPE_CHECKING:
    from efficientrag.testing.fake_openai import (
        FakeOpenAIServer,
        ScriptedReply,
        echo_responder,
        queue_responder,
        rule_responder,
    )


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'efficientrag.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module("efficientrag.testing.fake_openai"), name)
    globals()[name] = value
    return value
