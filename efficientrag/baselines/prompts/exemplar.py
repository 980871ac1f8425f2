"""One worked example, written once and rendered into every prompt kind.

A single record carries what each kind shows: the answer (Direct), the reasoning (CoT,
Iter-RetGen), the chain of single-hop sub-questions with their answers (Decompose, Self-Ask) and
the short documents a retriever would return (Direct-R, Iter-RetGen). Keeping them together means
the six prompts of a dataset always teach the same reasoning for the same question.
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError


@dataclass(frozen=True)
class Exemplar:
    question: str
    answer: str
    # A few sentences that reach the answer; ends by stating it.
    thought: str
    # (single-hop sub-question, its short answer), in the order they are asked.
    steps: tuple[tuple[str, str], ...]
    # (title, text) of the passages that support the answer.
    documents: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        if not self.question.strip() or not self.answer.strip():
            raise InvalidArgumentError("an exemplar needs a question and an answer")
        if not self.steps:
            raise InvalidArgumentError(f"exemplar {self.question!r} has no sub-question steps")
        if not self.documents:
            raise InvalidArgumentError(f"exemplar {self.question!r} has no documents")
