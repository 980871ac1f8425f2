"""What every method returns, so one runner scores them all the same way.

A method is anything with a ``name`` and ``run_batch(examples) -> list[Prediction]``. Retrieval-only
methods leave ``answer`` as None. ``ranked`` says whether ``chunks`` is one ranked list (Direct-R:
scored at several cut-offs k) or the set an iterative method settled on (scored as a whole).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from efficientrag.data.schema import Chunk, Example


class Counters(dict):
    """Cost counters of one prediction (``llm_calls``, ``prompt_tokens``, ``completion_tokens``,
    ``retrieval_calls``, ``time_<stage>_s`` ...). A dict, so it serializes as is."""

    def add(self, key: str, value: float = 1) -> None:
        self[key] = self.get(key, 0) + value


@dataclass
class Prediction:
    example_id: str
    chunks: list[Chunk]
    answer: str | None = None
    scores: list[float] | None = None
    ranked: bool = False
    trace: dict[str, Any] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)
    raw_output: str | None = None


class Method(Protocol):
    name: str

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]: ...
