"""The bookkeeping of one batched run of the EfficientRAG loop: each question's state across hops,
and what one hop produces step by step.

:class:`~efficientrag.pipeline.efficientrag.EfficientRAG` runs every step of a hop over all open
branches of all questions at once; these records keep track of which question and branch each
batched item belongs to, so the steps read as steps. They hold data only: every decision is the
loop's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from efficientrag.data.schema import Chunk
from efficientrag.pipeline.budget import Judgements
from efficientrag.pipeline.trace import HitRecord, Hop
from efficientrag.retrieval.base import Hit


@dataclass
class Branch:
    query: str
    words: list[str]


@dataclass
class QuestionState:
    question: str
    branches: list[Branch]
    index: int = 0  # the question's position in the batch
    # What the chunk budget's last step reads (efficientrag.pipeline.budget), and the judged chunks.
    judgements: Judgements = field(default_factory=Judgements)
    chunks: dict[str, Chunk] = field(default_factory=dict)
    labeled_pairs: set[tuple[str, str]] = field(default_factory=set)
    # Floor chunks tagged Terminate: in the pool, but judged again by later queries (like any
    # rejected chunk), so a bridge paragraph kept only by the floor can still open its branch.
    floor_only: set[str] = field(default_factory=set)
    queries_used: set[str] = field(default_factory=set)
    trace: list[Hop] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    def count(self, key: str, value: float = 1.0) -> None:
        self.counters[key] = self.counters.get(key, 0.0) + value


@dataclass
class Pair:
    """A (query, chunk) pair the Labeler judges in this hop; ``branch`` indexes the hop's branches,
    ``rank`` is the chunk's place in that branch's hits."""

    state: QuestionState
    branch: int
    hit: Hit
    record: HitRecord
    rank: int = 0


@dataclass
class FilterJob:
    """One next-hop query to write: the Filter's input words (query plus labeled words)."""

    state: QuestionState
    words: list[str]


@dataclass
class HopWork:
    """What one hop of a batch produces, step by step; every list is batched over all questions."""

    hop: int
    branches: list[tuple[QuestionState, Branch]]
    records: list[list[HitRecord]] = field(default_factory=list)  # per branch, in rank order
    pairs: list[Pair] = field(default_factory=list)
    labels: list[Any] = field(default_factory=list)  # the Labeler's prediction per pair
    truncated: dict[int, int] = field(default_factory=dict)  # branch -> query words cut
    # branch -> (Continue probability, labeled words) of each Continue chunk that entered the pool
    continued: dict[int, list[tuple[float, list[str]]]] = field(default_factory=dict)
    jobs: list[FilterJob] = field(default_factory=list)
    next_branches: dict[int, list[Branch]] = field(default_factory=dict)  # id(state) -> branches
    seconds: dict[str, float] = field(default_factory=dict)  # the whole batch's time per stage
    retrieval_split: dict[str, float] = field(default_factory=dict)  # encode/search, if reported

    def __post_init__(self) -> None:
        self.groups: list[tuple[QuestionState, list[int]]] = []  # each question with its branch indices
        for bi, (state, _) in enumerate(self.branches):
            if not self.groups or self.groups[-1][0] is not state:
                self.groups.append((state, []))
            self.groups[-1][1].append(bi)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.seconds[stage] = time.perf_counter() - t0


def query_key(query: str) -> str:
    """The form in which two queries count as the same (case and spacing ignored).

    Args:
        query: A query.

    Returns:
        Its key.
    """
    return " ".join(query.lower().split())
