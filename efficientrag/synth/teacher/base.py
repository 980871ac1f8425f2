"""What a teacher is: the three judgements synthesis needs, made by an LLM or by annotations.

Stages call a teacher and turn its answers into records (``efficientrag.synth.records``); they do
not care whether the answer came from gold annotations (``teacher/annotations.py``) or from an
LLM. Each method may return its result directly or an awaitable of it: the stage runner awaits
it, with bounded concurrency, so an LLM teacher is written with ``async def``.

A teacher signals "cannot do this record" by raising :class:`efficientrag.synth.records.Reject`
with a short fixed reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.records import Decomposition, Reject, SubQuestion

# Reasons shared by the dataset-specific decomposers.
R_FORMAT = "unsupported record format"
R_MALFORMED = "malformed record"
R_NOT_IN_CORPUS = "gold paragraph not in corpus"
R_NO_PARAGRAPH = "sub-question without gold paragraph"


@dataclass(frozen=True)
class Extraction:
    """Chunk words a teacher says are needed, in chunk order. ``chunk_word_indices`` are their
    positions in ``split_words(chunk.contents)`` when known exactly (then no search is needed)."""

    words: list[str]
    chunk_word_indices: list[int] | None = None
    method: str = ""


@dataclass(frozen=True)
class DependencyInfo:
    """A sub-question the next hop depends on, with what the Labeler found for it."""

    sub_question: SubQuestion
    query_words: list[str]  # the query its own hop was retrieved with
    info_words: list[str]  # its labeled chunk words: the "Info" of the Filter input


@runtime_checkable
class Teacher(Protocol):
    name: str

    def decompose(self, example: Example) -> Decomposition | Awaitable[Decomposition]:
        """One sub-question per gold chunk, with answers and dependencies."""
        ...

    def extract_words(
        self, example: Example, sub_question: SubQuestion, chunk: Chunk
    ) -> Extraction | Sequence[str] | Awaitable[Extraction | Sequence[str]]:
        """The words of ``chunk`` needed to answer ``sub_question``."""
        ...

    def next_hop_query(
        self,
        example: Example,
        sub_question: SubQuestion,
        prev_query_words: Sequence[str],
        dependencies: Sequence[DependencyInfo],
    ) -> Sequence[str] | str | Awaitable[Sequence[str] | str]:
        """The next-hop query for ``sub_question``, using only words of ``prev_query_words`` and
        of the dependencies' ``info_words`` (the paper's rule: pick words, never add or reorder)."""
        ...

    def progress(self) -> Mapping[str, Any]:
        """Extra progress-bar fields (an LLM teacher reports calls and cost); may be empty."""
        ...

    def params(self) -> Mapping[str, Any]:
        """Settings its outputs depend on (model, prompt version, options): resuming a run with
        other params is refused, so records from two teachers never mix in one file."""
        ...


def field_of(raw: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    """``raw[name]`` checked to be of ``kind``, else a reject naming the field."""
    if name not in raw:
        raise Reject(R_MALFORMED, f"missing field {name!r}")
    value = raw[name]
    if not isinstance(value, kind):
        raise Reject(R_MALFORMED, f"field {name!r} is {type(value).__name__}")
    return value
