"""The two models, what they read, and the training rows that teach them.

These rows are the contract between synthesis (``efficientrag.synth``), which writes them, and
training (``efficientrag.training``), which reads them. Labels are per *word* (see
``efficientrag.text.words``); sub-word labels are derived at tokenization time. The module imports
no torch, so synthesis and config validation can read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from efficientrag.errors import InvalidArgumentError
from efficientrag.record_fields import JsonRecord

# The model kinds: every table keyed by kind (configs, networks, training presets, the CLI) reads this.
KINDS = ("labeler", "filter")

# What the networks read besides token ids: the segment of each position (special tokens and
# padding, query words, target words; "pair" tag-head pooling reads the query and the chunk apart
# through it), and the label of positions the token loss ignores (anything not a target word).
SEG_OTHER, SEG_QUERY, SEG_TARGET = 0, 1, 2
IGNORE_INDEX = -100

TAG_CONTINUE = "continue"
TAG_TERMINATE = "terminate"
TAGS = (TAG_CONTINUE, TAG_TERMINATE)  # index = class id, as in the official 2-tag mapping

QUERY_MARK = ["Query", ":"]
INFO_MARK = ["Info", ":"]
INFO_SEP = ";"


def filter_words(query_words: Sequence[str], infos: Sequence[Sequence[str]]) -> list[str]:
    """The Filter's input as words: ``Query: <query> Info: <i1>; Info: <i2>`` (official format)."""
    words = [*QUERY_MARK, *query_words]
    for i, info in enumerate(infos):
        if i:
            words.append(INFO_SEP)
        words.extend(INFO_MARK)
        words.extend(info)
    return words


@dataclass
class LabelerRow(JsonRecord):
    """One (query, chunk) pair: which chunk words are useful, and whether to continue."""

    kind: ClassVar[str] = "labeler"
    id: str
    question_id: str
    query_words: list[str]
    chunk_words: list[str]
    labels: list[int]
    tag: str
    chunk_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.chunk_words):
            raise InvalidArgumentError(
                f"row {self.id}: {len(self.labels)} labels for {len(self.chunk_words)} chunk words"
            )
        if self.tag not in TAGS:
            raise InvalidArgumentError(f"row {self.id}: tag must be one of {TAGS}, got {self.tag!r}")


@dataclass
class FilterRow(JsonRecord):
    """One Filter example: which words of ``Query: … Info: …`` form the next-hop query."""

    kind: ClassVar[str] = "filter"
    id: str
    question_id: str
    words: list[str]
    labels: list[int]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.words):
            raise InvalidArgumentError(
                f"row {self.id}: {len(self.labels)} labels for {len(self.words)} words"
            )


# The training row of each model kind.
ROW_TYPES: dict[str, type[LabelerRow] | type[FilterRow]] = {cls.kind: cls for cls in (LabelerRow, FilterRow)}
