"""Prompt text for each kind, from the instructions and a dataset's exemplars.

Every prompt is: the instruction, the exemplars (each shows the same fields the real question
gets), then the question with the reply left open. Documents appear as ``[i] title: text``,
the chunk's ``contents`` (the string the retriever indexed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from efficientrag.baselines.prompts import instructions as ins
from efficientrag.baselines.prompts.exemplar import Exemplar


def format_documents(contents: Sequence[str]) -> str:
    """Numbered documents, one per line; "(no documents)" keeps the layout when retrieval found none."""
    if not contents:
        return "(no documents)"
    return "\n".join(f"[{i}] {' '.join(text.split())}" for i, text in enumerate(contents, start=1))


def _json(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _doc_text(ex: Exemplar) -> list[str]:
    return [f"{title}: {text}" for title, text in ex.documents]


def _answer(ex: Exemplar) -> dict:
    return {"answer": ex.answer}


def _thought(ex: Exemplar) -> dict:
    return {"thought": ex.thought, "answer": ex.answer}


@dataclass(frozen=True)
class PromptSet:
    """The prompts of one dataset family (``dataset`` names whose exemplars they show)."""

    dataset: str
    exemplars: tuple[Exemplar, ...]

    def _qa(
        self,
        instruction: str,
        reply: Callable[[Exemplar], dict],
        question: str,
        documents: Sequence[str] | None = None,
    ) -> str:
        """The instruction, one block per exemplar ending in its JSON ``reply``, then the question
        left open; with ``documents``, every block starts with its documents."""

        def block(docs: Sequence[str] | None, q: str) -> str:
            head = f"Documents:\n{format_documents(docs)}\n" if docs is not None else ""
            return f"{head}Question: {q}\nAnswer:"

        shown = [
            f"{block(_doc_text(e) if documents is not None else None, e.question)} {_json(reply(e))}"
            for e in self.exemplars
        ]
        return "\n\n".join([instruction, *shown, block(documents, question)])

    def direct(self, question: str) -> str:
        return self._qa(ins.DIRECT, _answer, question)

    def cot(self, question: str) -> str:
        return self._qa(ins.COT, _thought, question)

    def decompose(self, question: str) -> str:
        return self._qa(ins.DECOMPOSE, lambda e: {"decomposed_questions": [q for q, _ in e.steps]}, question)

    def answer(self, question: str, documents: Sequence[str]) -> str:
        """Answer from documents (Direct-R, Decompose-R, EfficientRAG, Self-Ask's follow-ups)."""
        return self._qa(ins.RETRIEVAL_ANSWER, _answer, question, documents)

    def iter_retgen(self, question: str, documents: Sequence[str]) -> str:
        return self._qa(ins.ITER_RETGEN, _thought, question, documents)

    def self_ask(self, question: str) -> str:
        """The Self-Ask scratchpad's start; the method appends follow-ups and intermediate answers."""
        blocks = []
        for e in self.exemplars:
            lines = [f"Question: {e.question}", f"{ins.NEEDS_FOLLOW_UP} Yes."]
            for sub_question, sub_answer in e.steps:
                lines += [f"{ins.FOLLOW_UP} {sub_question}", f"{ins.INTERMEDIATE} {sub_answer}"]
            lines.append(f"{ins.FINAL} {e.answer}")
            blocks.append("\n".join(lines))
        return "\n\n".join([ins.SELF_ASK, *blocks, f"Question: {question}\n{ins.NEEDS_FOLLOW_UP}"])
