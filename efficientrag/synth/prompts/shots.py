"""The few-shot examples of the LLM teacher and the per-dataset sets they come in.

Each dataset file (``hotpotqa.yaml``, ``twowiki.yaml``, ``musique.yaml``, ``generic.yaml``: data,
read by :func:`load_prompt_set`) holds one :class:`PromptSet`: decomposition examples per question *shape* (bridge, comparison, 3-hop chain,
...), a note per question *type* that tells the model which shape it is looking at, and the
examples of the two word-picking tasks. All examples are invented (fictional entities) and obey
the rules they teach: the tests check that every example decomposition validates, every example
labeling is copied in order from its paragraph, and every example next-hop query is picked, in
order, from its question and known information.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from efficientrag.errors import InvalidArgumentError


@dataclass(frozen=True)
class SubQuestionShot:
    sub_question: str
    answer: str
    dependency: tuple[int, ...]
    document: int  # 1-based number of the paragraph, as the prompt numbers them


@dataclass(frozen=True)
class DecomposeShot:
    """A question with its paragraphs (and the dataset's annotations) and the decomposition."""

    question: str
    answer: str
    qtype: str
    paragraphs: tuple[tuple[str, str], ...]  # (title, text)
    sub_questions: tuple[SubQuestionShot, ...]
    # 2Wiki evidence triples (subject, relation, object); MuSiQue annotated steps
    # (question with #k, answer, paragraph number). At most one of the two is set.
    triples: tuple[tuple[str, str, str], ...] = ()
    steps: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True)
class LabelShot:
    sub_question: str
    answer: str
    paragraph: tuple[str, str]  # (title, text); the model sees "title: text", as the Labeler does
    extracted_words: str


@dataclass(frozen=True)
class NextHopShot:
    question: str  # the previous query (the original question at hop 2)
    answered: tuple[tuple[str, str, str], ...]  # per dependency: (sub-question, answer, known info)
    filtered_query: str


@dataclass(frozen=True)
class PromptSet:
    """The examples and notes of one dataset family.

    ``shapes`` maps a shape name to its decomposition examples; ``type_shapes`` maps a question
    type (as the dataset names it) to the shapes whose examples the prompt shows; an unknown or
    missing type gets ``default_shapes``. ``type_notes`` are one-line descriptions of each type.
    """

    dataset: str
    shapes: dict[str, tuple[DecomposeShot, ...]]
    type_shapes: dict[str, tuple[str, ...]]
    default_shapes: tuple[str, ...]
    type_notes: dict[str, str]
    label: tuple[LabelShot, ...]
    next_hop: tuple[NextHopShot, ...]

    def __post_init__(self) -> None:
        for name in (*self.default_shapes, *(s for v in self.type_shapes.values() for s in v)):
            if name not in self.shapes:
                raise InvalidArgumentError(f"prompt set {self.dataset!r}: unknown shape {name!r}")

    def decompose_shots(self, qtype: str) -> list[DecomposeShot]:
        names = self.type_shapes.get(qtype, self.default_shapes)
        return [shot for name in names for shot in self.shapes[name]]

    def type_note(self, qtype: str) -> str:
        return self.type_notes.get(qtype, "")


def load_prompt_set(path: str | Path) -> PromptSet:
    """A prompt set file (see the module docstring): YAML lists become the dataclasses' tuples."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return PromptSet(
        dataset=data["dataset"],
        shapes={name: tuple(_decompose_shot(s) for s in shots) for name, shots in data["shapes"].items()},
        type_shapes={qtype: tuple(names) for qtype, names in data["type_shapes"].items()},
        default_shapes=tuple(data["default_shapes"]),
        type_notes=dict(data["type_notes"]),
        label=tuple(
            LabelShot(s["sub_question"], s["answer"], _paragraph(s["paragraph"]), s["extracted_words"])
            for s in data["label"]
        ),
        next_hop=tuple(
            NextHopShot(s["question"], tuple(tuple(a) for a in s["answered"]), s["filtered_query"])
            for s in data["next_hop"]
        ),
    )


def _decompose_shot(s: dict[str, Any]) -> DecomposeShot:
    return DecomposeShot(
        question=s["question"],
        answer=s["answer"],
        qtype=s["qtype"],
        paragraphs=tuple(_paragraph(p) for p in s["paragraphs"]),
        sub_questions=tuple(
            SubQuestionShot(q["sub_question"], q["answer"], tuple(q["dependency"]), q["document"])
            for q in s["sub_questions"]
        ),
        triples=tuple(tuple(t) for t in s.get("triples", ())),
        steps=tuple(tuple(t) for t in s.get("steps", ())),
    )


def _paragraph(p: dict[str, str]) -> tuple[str, str]:
    return (p["title"], p["text"])
