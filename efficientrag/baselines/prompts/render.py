"""Prompt text for each kind, from the instructions and a dataset's exemplars.

Every prompt is: the instruction, the exemplars (each shows the same fields the real question
gets), then the question with the reply left open. Documents appear as ``[i] title: text``,
the chunk's ``contents`` (the string the retriever indexed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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


@dataclass(frozen=True)
class PromptSet:
    """The prompts of one dataset family (``dataset`` names whose exemplars they show)."""

    dataset: str
    exemplars: tuple[Exemplar, ...]

    def _assemble(self, instruction: str, blocks: list[str], target: str) -> str:
        parts = [instruction, *blocks, target]
        return "\n\n".join(parts)

    def direct(self, question: str) -> str:
        blocks = [f"Question: {e.question}\nAnswer: {_json({'answer': e.answer})}" for e in self.exemplars]
        return self._assemble(ins.DIRECT, blocks, f"Question: {question}\nAnswer:")

    def cot(self, question: str) -> str:
        blocks = [
            f"Question: {e.question}\nAnswer: {_json({'thought': e.thought, 'answer': e.answer})}"
            for e in self.exemplars
        ]
        return self._assemble(ins.COT, blocks, f"Question: {question}\nAnswer:")

    def decompose(self, question: str) -> str:
        blocks = [
            f"Question: {e.question}\nAnswer: {_json({'decomposed_questions': [q for q, _ in e.steps]})}"
            for e in self.exemplars
        ]
        return self._assemble(ins.DECOMPOSE, blocks, f"Question: {question}\nAnswer:")

    def answer(self, question: str, documents: Sequence[str]) -> str:
        """Answer from documents (Direct-R, Decompose-R, EfficientRAG, Self-Ask's follow-ups)."""
        blocks = [
            f"Documents:\n{format_documents(_doc_text(e))}\nQuestion: {e.question}\n"
            f"Answer: {_json({'answer': e.answer})}"
            for e in self.exemplars
        ]
        target = f"Documents:\n{format_documents(documents)}\nQuestion: {question}\nAnswer:"
        return self._assemble(ins.RETRIEVAL_ANSWER, blocks, target)

    def iter_retgen(self, question: str, documents: Sequence[str]) -> str:
        blocks = [
            f"Documents:\n{format_documents(_doc_text(e))}\nQuestion: {e.question}\n"
            f"Answer: {_json({'thought': e.thought, 'answer': e.answer})}"
            for e in self.exemplars
        ]
        target = f"Documents:\n{format_documents(documents)}\nQuestion: {question}\nAnswer:"
        return self._assemble(ins.ITER_RETGEN, blocks, target)

    def self_ask(self, question: str) -> str:
        """The Self-Ask scratchpad's start; the method appends follow-ups and intermediate answers."""
        blocks = []
        for e in self.exemplars:
            lines = [f"Question: {e.question}", f"{ins.NEEDS_FOLLOW_UP} Yes."]
            for sub_question, sub_answer in e.steps:
                lines += [f"{ins.FOLLOW_UP} {sub_question}", f"{ins.INTERMEDIATE} {sub_answer}"]
            lines.append(f"{ins.FINAL} {e.answer}")
            blocks.append("\n".join(lines))
        return self._assemble(ins.SELF_ASK, blocks, f"Question: {question}\n{ins.NEEDS_FOLLOW_UP}")
