"""What the decomposition prompt shows of a record: its gold paragraphs, in a fixed order, and
the dataset's own annotations when the raw record has them (the paper's teacher saw the same):
2Wiki's evidence triples and MuSiQue's annotated steps (also the toy world's). HotpotQA has
neither; its type decides the examples, and IRCoT's file, which has no type, gets one inferred
as the annotation teacher does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.prompts.render import DecomposeInput
from efficientrag.synth.records import Reject
from efficientrag.synth.teacher import hotpotqa
from efficientrag.synth.teacher.paragraphs import ChunkLookup


def question_type(example: Example) -> str:
    qtype = example.type or str(example.raw.get("type") or "")
    if qtype or example.dataset != "hotpotqa":
        return qtype
    try:
        return hotpotqa.infer_type(example.question, example.answer, hotpotqa.gold_paragraphs(example.raw))
    except (Reject, KeyError, TypeError, ValueError, AttributeError):
        return ""


def decompose_input(
    example: Example, chunks: Sequence[Chunk], lookup: ChunkLookup, *, hints: bool = True
) -> DecomposeInput:
    """``chunks`` are the question's gold chunks, in the order the prompt numbers them."""
    raw = example.raw if hints else {}
    return DecomposeInput(
        question=example.question,
        answer=example.answer,
        qtype=question_type(example),
        paragraphs=[c.contents for c in chunks],
        triples=evidence_triples(raw),
        steps=annotated_steps(raw, lookup, {c.id: n for n, c in enumerate(chunks, start=1)}),
    )


def evidence_triples(raw: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """2Wiki ``evidences`` as (subject, relation, object); none when any triple is malformed."""
    evidences = raw.get("evidences")
    if not isinstance(evidences, list):
        return []
    out = []
    for ev in evidences:
        if not isinstance(ev, (list, tuple)) or len(ev) != 3:
            return []
        s, r, o = (str(x).strip() for x in ev)
        out.append((s, r, o))
    return out


def annotated_steps(
    raw: Mapping[str, Any], lookup: ChunkLookup, number_of: Mapping[str, int]
) -> list[tuple[str, str, int | None]]:
    """MuSiQue ``question_decomposition`` as (question, answer, paragraph number in the prompt);
    the number is None when the step's paragraph is not one of the prompt's."""
    steps = raw.get("question_decomposition")
    if not isinstance(steps, list) or not all(isinstance(s, Mapping) for s in steps):
        return []
    paragraphs: dict[int, Mapping[str, Any]] = {}
    for pos, p in enumerate(raw.get("paragraphs") or []):
        if isinstance(p, Mapping) and str(p.get("idx", pos)).lstrip("-").isdigit():
            paragraphs[int(p.get("idx", pos))] = p
    out = []
    for step in steps:
        number = None
        support = step.get("paragraph_support_idx")
        para = paragraphs.get(int(support)) if str(support).lstrip("-").isdigit() else None
        if para is not None:
            chunk_id = lookup.find(str(para.get("title") or ""), str(para.get("paragraph_text") or ""))
            number = number_of.get(chunk_id) if chunk_id is not None else None
        out.append((str(step.get("question") or "").strip(), str(step.get("answer") or "").strip(), number))
    return out
