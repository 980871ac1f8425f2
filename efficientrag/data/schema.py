"""The two records everything else passes around: a retrievable ``Chunk`` and a question ``Example``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from efficientrag.record_fields import JsonRecord


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage. ``id`` is unique within a corpus.

    Attributes:
        id: The chunk's id, unique within its corpus; hits, traces and gold labels name chunks by it.
        title: The title of the page the passage comes from ("" when the source has none).
        text: The passage itself, without its title.
    """

    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        """What gets embedded and shown to models: ``"{title}: {text}"`` (the official format)."""
        return f"{self.title}: {self.text}" if self.title else self.text

    def to_dict(self) -> dict[str, str]:
        """The chunk as one corpus JSONL line.

        Returns:
            ``{"id", "title", "text"}``, which :meth:`from_dict` reads back.
        """
        return {"id": self.id, "title": self.title, "text": self.text}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        """Read a chunk from a corpus line in either format this package accepts.

        Args:
            d: ``{"id", "title", "text"}`` (title optional), or FlashRAG's ``{"id", "contents"}``
                whose contents are the title, a newline, then the text (no newline: all text).

        Returns:
            The chunk, with its id as a string.

        Raises:
            KeyError: The line has no ``id``, or neither ``text`` nor ``contents``.
        """
        if "text" in d:
            return cls(id=str(d["id"]), title=str(d.get("title") or ""), text=str(d["text"]))
        # FlashRAG corpora: {"id", "contents"} with "title\ntext" or "title: text" contents.
        contents = str(d["contents"])
        title, _, text = contents.partition("\n")
        if not text:
            title, text = "", contents
        return cls(id=str(d["id"]), title=title.strip().strip('"'), text=text.strip())


@dataclass
class Example(JsonRecord):
    """One multi-hop question.

    ``gold_chunk_ids`` are ordered by reasoning hop where the dataset says so (MuSiQue
    decompositions, 2Wiki evidence chains); ``context_ids`` are all paragraphs the dataset gave
    with the question (gold and distractors), after pooling they point into the pooled corpus.
    ``raw`` is the untouched source record: the annotation teacher reads it.

    Attributes:
        id: The question's id, unique within its dataset.
        question: The question text.
        answers: Every accepted answer (the first is the main one); empty when the dataset has none.
        gold_chunk_ids: The chunks that support the answer, in hop order where the dataset says so;
            empty for unlabeled questions.
        type: The dataset's question type (``"bridge"``, ``"comparison"``, ...), or "".
        dataset: The dataset the question came from (``"hotpotqa"``, ``"2wiki"``, ...), or "".
        context_ids: Every paragraph given with the question, gold and distractors.
        raw: The untouched source record.
    """

    optional_fields = ("answers", "gold_chunk_ids")

    id: str
    question: str
    answers: list[str]
    gold_chunk_ids: list[str]
    type: str = ""
    dataset: str = ""
    context_ids: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def answer(self) -> str:
        """The main answer (the first of ``answers``), or "" when there is none."""
        return self.answers[0] if self.answers else ""

    def to_dict(self, *, with_raw: bool = True) -> dict[str, Any]:
        """The example as one JSONL line (what ``prepare`` writes and :meth:`from_dict` reads).

        Args:
            with_raw: Whether to include the source record under ``"raw"`` (large; the annotation
                teacher needs it, a predictions file does not).

        Returns:
            A dict with the fields in declaration order (lists copied).
        """
        d = {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "gold_chunk_ids": list(self.gold_chunk_ids),
            "type": self.type,
            "dataset": self.dataset,
            "context_ids": list(self.context_ids),
        }
        if with_raw:
            d["raw"] = self.raw
        return d
