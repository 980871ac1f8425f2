"""Chat messages for the three teacher tasks: instruction, worked examples, then the record.

Examples are shown as earlier turns of the same chat (user: the input, assistant: the JSON
reply), rendered by the same functions as the real input, so the model sees one format. The
user-message layout is also what the test oracle (``efficientrag.testing.synth_oracle``) reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.synth.prompts import instructions as ins
from efficientrag.synth.prompts.shots import DecomposeShot, LabelShot, NextHopShot, PromptSet

Message = dict[str, str]

# Section headers of the user messages (the oracle parses them).
TRIPLES_HEADER = "Evidence triples (subject | relation | object):"
STEPS_HEADER = "Annotated steps (#k is the answer of step k):"


@dataclass(frozen=True)
class DecomposeInput:
    question: str
    answer: str
    qtype: str
    paragraphs: Sequence[str]  # chunk contents ("title: text"), numbered from 1 in the prompt
    triples: Sequence[tuple[str, str, str]] = field(default=())
    # (question with #k, answer, paragraph number or None when the paragraph was not found)
    steps: Sequence[tuple[str, str, int | None]] = field(default=())


def one_line(text: str) -> str:
    """Collapse whitespace: a paragraph's newlines would break the line-based layout."""
    return " ".join(str(text).split())


def decompose_user(inp: DecomposeInput, type_note: str) -> str:
    lines = [f"Question: {one_line(inp.question)}"]
    if inp.answer.strip():
        lines.append(f"Final answer: {one_line(inp.answer)}")
    if inp.qtype:
        lines.append(f"Question type: {inp.qtype}" + (f" ({type_note})" if type_note else ""))
    lines.append("Paragraphs:")
    lines += [f"[{n}] {one_line(p)}" for n, p in enumerate(inp.paragraphs, start=1)]
    if inp.triples:
        lines.append(TRIPLES_HEADER)
        lines += [f"- {one_line(s)} | {one_line(r)} | {one_line(o)}" for s, r, o in inp.triples]
    if inp.steps:
        lines.append(STEPS_HEADER)
        for k, (q, a, p) in enumerate(inp.steps, start=1):
            where = f" (paragraph {p})" if p is not None else ""
            lines.append(f"{k}. {one_line(q)} -> {one_line(a)}{where}")
    return "\n".join(lines)


def decompose_reply(shot: DecomposeShot) -> str:
    return _json(
        {
            "decomposed_questions": {
                str(k): {
                    "sub_question": s.sub_question,
                    "answer": s.answer,
                    "dependency": list(s.dependency),
                    "document": s.document,
                }
                for k, s in enumerate(shot.sub_questions, start=1)
            }
        }
    )


def shot_input(shot: DecomposeShot) -> DecomposeInput:
    return DecomposeInput(
        question=shot.question,
        answer=shot.answer,
        qtype=shot.qtype,
        paragraphs=[f"{t}: {x}" for t, x in shot.paragraphs],
        triples=shot.triples,
        steps=shot.steps,
    )


def decompose_messages(prompts: PromptSet, inp: DecomposeInput) -> list[Message]:
    turns: list[tuple[str, str]] = [
        (decompose_user(shot_input(s), prompts.type_note(s.qtype)), decompose_reply(s))
        for s in prompts.decompose_shots(inp.qtype)
    ]
    return _chat(ins.DECOMPOSE, turns, decompose_user(inp, prompts.type_note(inp.qtype)))


def label_user(sub_question: str, answer: str, paragraph: str) -> str:
    return f"Sub-question: {one_line(sub_question)}\nAnswer: {one_line(answer)}\nParagraph: {one_line(paragraph)}"


def label_messages(prompts: PromptSet, sub_question: str, answer: str, paragraph: str) -> list[Message]:
    turns = [
        (label_user(s.sub_question, s.answer, f"{s.paragraph[0]}: {s.paragraph[1]}"), _label_reply(s))
        for s in prompts.label
    ]
    return _chat(ins.LABEL, turns, label_user(sub_question, answer, paragraph))


def _label_reply(shot: LabelShot) -> str:
    return _json({"extracted_words": shot.extracted_words})


def next_hop_user(question: str, answered: Sequence[tuple[str, str, str]]) -> str:
    lines = [f"Question: {one_line(question)}"]
    for sub_question, answer, info in answered:
        lines.append(f"Answered: {one_line(sub_question)} -> {one_line(answer)}")
        lines.append(f"Known information: {one_line(info)}")
    return "\n".join(lines)


def next_hop_messages(
    prompts: PromptSet, question: str, answered: Sequence[tuple[str, str, str]]
) -> list[Message]:
    turns = [(next_hop_user(s.question, s.answered), _next_hop_reply(s)) for s in prompts.next_hop]
    return _chat(ins.NEXT_HOP, turns, next_hop_user(question, answered))


def _next_hop_reply(shot: NextHopShot) -> str:
    return _json({"filtered_query": shot.filtered_query})


def _chat(system: str, turns: Sequence[tuple[str, str]], user: str) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": system}]
    for shot_user, shot_reply in turns:
        messages.append({"role": "user", "content": shot_user})
        messages.append({"role": "assistant", "content": shot_reply})
    messages.append({"role": "user", "content": user})
    return messages


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
