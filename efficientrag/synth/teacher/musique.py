"""MuSiQue (and the toy world, written in MuSiQue's format): the decomposition is annotated.

Each ``question_decomposition`` step becomes a sub-question: its text with every ``#k``
reference replaced by answer k (what an LLM decomposition writes: "Who did Audrey Hepburn ...")
and its knowledge-base form ``"X >> relation"`` turned into a question; its answer; its chunk
(``paragraph_support_idx``, an ``idx`` of ``paragraphs``); its dependencies (the ``#k``).
"""

from __future__ import annotations

import re
from typing import Any

from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.records import Decomposition, Reject, SubQuestion
from efficientrag.synth.teacher.base import R_MALFORMED, R_NO_PARAGRAPH, R_NOT_IN_CORPUS, field_of
from efficientrag.synth.teacher.paragraphs import ChunkLookup, RawParagraph
from efficientrag.synth.teacher.relations import relation_question

_REF = re.compile(r"#(\d+)")


def decompose(example: Example, lookup: ChunkLookup) -> Decomposition:
    raw = example.raw
    steps = field_of(raw, "question_decomposition", list)
    paragraphs = _paragraphs_by_idx(field_of(raw, "paragraphs", list))
    answers = []
    for k, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            raise Reject(R_MALFORMED, f"question_decomposition[{k - 1}] is not an object")
        answers.append(str(step.get("answer") or "").strip())
    subs = []
    for k, step in enumerate(steps, start=1):
        text = str(step.get("question") or "")
        deps = sorted({int(m) for m in _REF.findall(text)})
        resolved = _REF.sub(lambda m: _answer_for(answers, int(m.group(1)), m.group(0)), text)
        if ">>" in resolved:
            subject, relation = resolved.split(">>", 1)
            resolved = relation_question(subject.strip(), [relation.strip()])
        support = step.get("paragraph_support_idx")
        if support is None or not str(support).lstrip("-").isdigit() or int(support) not in paragraphs:
            raise Reject(R_NO_PARAGRAPH, f"step {k}: paragraph_support_idx={support!r}")
        para = paragraphs[int(support)]
        chunk_id = lookup.find(str(para.get("title") or ""), str(para.get("paragraph_text") or ""))
        if chunk_id is None:
            raise Reject(R_NOT_IN_CORPUS, f"step {k}: paragraph {support} ({para.get('title')!r})")
        subs.append(SubQuestion(k, resolved.strip(), answers[k - 1], deps, chunk_id))
    return Decomposition(subs, example.type or str(raw.get("type") or ""))


def paragraph(example: Example, chunk: Chunk) -> RawParagraph | None:
    """MuSiQue paragraphs are plain texts with paragraph-level support only."""
    return None


def _answer_for(answers: list[str], k: int, fallback: str) -> str:
    return answers[k - 1] if 1 <= k <= len(answers) and answers[k - 1] else fallback


def _paragraphs_by_idx(paragraphs: list[Any]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for pos, p in enumerate(paragraphs):
        if not isinstance(p, dict):
            raise Reject(R_MALFORMED, f"paragraphs[{pos}] is not an object")
        idx = p.get("idx", pos)
        try:
            out[int(idx)] = p
        except (TypeError, ValueError):
            raise Reject(R_MALFORMED, f"paragraphs[{pos}].idx={idx!r}") from None
    return out
