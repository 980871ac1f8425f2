"""The records each synthesis stage writes, one JSON object per line, and their validation.

Every stage reads the previous stage's file and writes its own, keyed by ``id``, so a stage can be
resumed, inspected, or replaced (an LLM teacher writes the same records as the annotation
teacher). Layout and field meanings are documented in ``docs/synthesis.md``.

Stage files in ``out_dir``: ``decomposed.jsonl`` (one per question), ``labeled.jsonl``,
``aligned.jsonl``, ``next_hop.jsonl``, ``negatives.jsonl`` (one per sub-question, id
``"{question_id}#{idx}"``), and ``<stage>.rejects.jsonl`` for what each stage dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from efficientrag.errors import EfficientRAGError
from efficientrag.record_fields import JsonRecord

STAGES = ("decompose", "label", "align", "next_hop", "negatives", "build")
OUTPUT_FILES = {
    "decompose": "decomposed.jsonl",
    "label": "labeled.jsonl",
    "align": "aligned.jsonl",
    "next_hop": "next_hop.jsonl",
    "negatives": "negatives.jsonl",
}


class Reject(EfficientRAGError):
    """Raised by a stage function to drop a record. ``reason`` is a short fixed phrase (it is
    counted in stats), ``detail`` says what exactly was wrong with this record.

    Args:
        reason: The short fixed phrase (``"invalid dependency"``).
        detail: What was wrong with this record.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def sub_question_id(question_id: str, idx: int) -> str:
    return f"{question_id}#{idx}"


def question_id_of(record_id: str) -> str:
    """The question a (sub-question) record id belongs to."""
    return record_id.rsplit("#", 1)[0] if "#" in record_id else record_id


@dataclass
class SubQuestion(JsonRecord):
    optional_fields = ("dependency",)
    idx: int  # 1-based position in the decomposition
    sub_question: str
    answer: str
    dependency: list[int]  # idx of the sub-questions whose answers this one needs
    chunk_id: str  # the pooled-corpus chunk that answers it
    # When one chunk answers several facts (2Wiki: birth and death date of one person), the
    # separate answers; ``answer`` then joins them. Empty otherwise.
    answer_parts: list[str] = field(default_factory=list)

    def answers(self) -> list[str]:
        return list(self.answer_parts) or [self.answer]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.answer_parts:
            d.pop("answer_parts")
        return d


@dataclass
class DecomposedRecord(JsonRecord):
    optional_fields = ("answers", "dataset", "type", "teacher")
    id: str
    question: str
    answers: list[str]
    dataset: str
    type: str
    teacher: str
    sub_questions: list[SubQuestion]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sub_questions"] = [s.to_dict() for s in self.sub_questions]
        return d


@dataclass
class LabeledRecord:
    id: str  # "{question_id}#{idx}"
    question_id: str
    idx: int
    chunk_id: str
    sub_question: str
    answer: str
    extracted_words: list[str]  # chunk words needed to answer, in chunk order
    # Positions of ``extracted_words`` in the chunk's words when the teacher knows them exactly
    # (the annotation teacher); the align stage then uses them instead of searching.
    chunk_word_indices: list[int] | None = None
    # How the teacher found the words (annotation teacher: "answer", "answer-unordered",
    # "overlap"); empty when it does not say.
    extract_method: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.chunk_word_indices is None:
            d.pop("chunk_word_indices")
        if not self.extract_method:
            d.pop("extract_method")
        return d


@dataclass
class Decomposition:
    """What a teacher's ``decompose`` returns: sub-questions, and the question type it settled on
    (the HotpotQA IRCoT file has no type field, so the teacher infers one)."""

    sub_questions: list[SubQuestion]
    type: str = ""


# Reasons shared by every teacher's decomposition (counted in stats).
R_COUNT = "sub-questions do not match gold chunks"
R_DEPENDENCY = "invalid dependency"
R_EMPTY = "empty sub-question or answer"


def validate_decomposition(sub_questions: Sequence[SubQuestion], gold_chunk_ids: Sequence[str]) -> None:
    """The checks every teacher's output must pass (the official check is #sub-questions ==
    #supporting facts; this one also checks which chunks and the dependency graph).

    Raises :class:`Reject` naming the first problem."""
    if not sub_questions:
        raise Reject(R_COUNT, "no sub-questions")
    idxs = [s.idx for s in sub_questions]
    if sorted(idxs) != list(range(1, len(idxs) + 1)):
        raise Reject(R_DEPENDENCY, f"sub-question idx must be 1..{len(idxs)}, got {idxs}")
    chunks = [s.chunk_id for s in sub_questions]
    repeated = sorted({c for c in chunks if chunks.count(c) > 1})
    if repeated:
        raise Reject(R_COUNT, f"chunk(s) {repeated} answer more than one sub-question")
    gold = set(gold_chunk_ids)
    if set(chunks) != gold:
        missing = sorted(gold - set(chunks))
        extra = sorted(set(chunks) - gold)
        # The count first: it is what an LLM most often gets wrong (the official check).
        count = (
            f"{len(chunks)} sub-questions for {len(gold)} gold chunks; " if len(chunks) != len(gold) else ""
        )
        raise Reject(
            R_COUNT, f"{count}gold chunks without a sub-question {missing}, non-gold chunks used {extra}"
        )
    for s in sub_questions:
        if not s.sub_question.strip() or not s.answer.strip():
            raise Reject(R_EMPTY, f"sub-question {s.idx}")
        for d in s.dependency:
            # bool is an int subclass: a parsed `true` must not pass as sub-question 1.
            if isinstance(d, bool) or not isinstance(d, int) or d not in idxs or d == s.idx:
                raise Reject(R_DEPENDENCY, f"sub-question {s.idx} depends on {d!r}")
    deps = {s.idx: set(s.dependency) for s in sub_questions}
    state: dict[int, int] = {}

    def visit(k: int) -> None:
        state[k] = 1
        for d in deps[k]:
            if state.get(d) == 1:
                raise Reject(R_DEPENDENCY, f"dependency cycle through sub-question {d}")
            if d not in state:
                visit(d)
        state[k] = 2

    for k in deps:
        if k not in state:
            visit(k)


def dependency_order(sub_questions: Sequence[SubQuestion]) -> list[SubQuestion]:
    """Sub-questions with every dependency before its dependents (stable otherwise)."""
    by_idx = {s.idx: s for s in sub_questions}
    done: set[int] = set()
    out: list[SubQuestion] = []
    while len(out) < len(by_idx):
        progressed = False
        for s in sub_questions:
            if s.idx not in done and all(d in done for d in s.dependency):
                out.append(s)
                done.add(s.idx)
                progressed = True
        if not progressed:
            raise Reject(R_DEPENDENCY, "dependency cycle")
    return out
