"""Hop chains from the datasets' gold annotations: which gold chunk a question reaches first, and
which gold chunk each one leads to.

TreeHop trains on edges parent chunk -> child chunk: the query formed from the parent (by the
network, from the question's vector down the chain) must retrieve the child. The edges come from
the same decomposition the annotation teacher derives for synthesis
(:class:`efficientrag.synth.teacher.annotations.AnnotationTeacher`), so both methods learn from one
reading of the annotations:

* MuSiQue (and the toy world): the annotated ``question_decomposition``; step k depends on the
  steps its text references as ``#j``.
* 2WikiMultihopQA with ``evidences``: a triple depends on an earlier one whose object is its subject
  (triples on one paragraph merge into one node). Without ``evidences`` (the public train slices):
  from the supporting-fact paragraphs, hop 1 being the paragraph that mentions the other's title;
  ``bridge_comparison`` gives two such pairs.
* HotpotQA: bridge questions from supporting facts (hop 1 mentions the other paragraph's title; ties
  decided by which title the question names; still undecided: rejected); comparison questions have
  two independent roots and no edge.

A node's hop is one plus the longest chain of dependencies above it (roots are hop 1). A chain
without any edge (comparison questions) is kept: it tells which chunks a question reaches on
its own, and it contributes nothing to the loss (a hop-1 query is the question itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.synth.records import Reject, validate_decomposition
from efficientrag.synth.teacher.annotations import AnnotationTeacher


@dataclass(frozen=True)
class HopChain:
    """The gold chunks of one question with their hop and the edges between them."""

    question_id: str
    question: str
    # Gold chunk id -> hop (1 = reached by the question itself).
    hops: dict[str, int]
    # (parent chunk id, child chunk id): the child's query is formed from the parent.
    edges: tuple[tuple[str, str], ...]
    type: str = ""
    dataset: str = ""

    @property
    def roots(self) -> list[str]:
        return [c for c, h in self.hops.items() if h == 1]

    @property
    def depth(self) -> int:
        return max(self.hops.values(), default=0)

    def children(self, chunk_id: str) -> list[str]:
        return [child for parent, child in self.edges if parent == chunk_id]

    def paths(self) -> list[tuple[str, ...]]:
        """Every path from a root down the edges (a prefix of a longer path included): the units
        the loss is computed on, each ending at the chunk its last query must retrieve."""
        out: list[tuple[str, ...]] = []

        def walk(path: tuple[str, ...]) -> None:
            out.append(path)
            for child in self.children(path[-1]):
                if child not in path:
                    walk((*path, child))

        for root in self.roots:
            walk((root,))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "hops": dict(self.hops),
            "edges": [list(e) for e in self.edges],
            "type": self.type,
            "dataset": self.dataset,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HopChain:
        return cls(
            question_id=str(d["question_id"]),
            question=str(d["question"]),
            hops={str(k): int(v) for k, v in d["hops"].items()},
            edges=tuple((str(a), str(b)) for a, b in d["edges"]),
            type=str(d.get("type", "")),
            dataset=str(d.get("dataset", "")),
        )


@dataclass
class ChainSet:
    """Chains of the questions that have one, and the reason every other question was dropped."""

    chains: list[HopChain] = field(default_factory=list)
    rejects: list[dict[str, str]] = field(default_factory=list)

    def stats(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for r in self.rejects:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        return {
            "questions": len(self.chains) + len(self.rejects),
            "chains": len(self.chains),
            "with_edges": sum(1 for c in self.chains if c.edges),
            "edges": sum(len(c.edges) for c in self.chains),
            "max_depth": max((c.depth for c in self.chains), default=0),
            "rejects": reasons,
        }


def derive_chain(example: Example, teacher: AnnotationTeacher) -> HopChain:
    """The chain of one question; raises :class:`Reject` naming why there is none."""
    decomposition = teacher.decompose(example)
    subs = decomposition.sub_questions
    validate_decomposition(subs, example.gold_chunk_ids)
    chunk_of = {s.idx: s.chunk_id for s in subs}
    deps = {s.idx: list(s.dependency) for s in subs}
    hop: dict[int, int] = {}

    def hop_of(idx: int) -> int:
        # validate_decomposition has refused cycles, so the recursion ends.
        if idx not in hop:
            hop[idx] = 1 + max((hop_of(d) for d in deps[idx]), default=0)
        return hop[idx]

    hops = {chunk_of[s.idx]: hop_of(s.idx) for s in subs}
    edges = tuple((chunk_of[d], chunk_of[s.idx]) for s in subs for d in s.dependency)
    return HopChain(
        question_id=example.id,
        question=example.question,
        hops=hops,
        edges=edges,
        type=decomposition.type or example.type,
        dataset=example.dataset,
    )


def derive_chains(examples: Sequence[Example], corpus: Corpus) -> ChainSet:
    """Chains for every example that has one; a question without is recorded, never fatal.

    Args:
        examples: The questions with their gold annotations (``raw`` kept).
        corpus: The pooled corpus their gold ids point into.

    Returns:
        The chains, and ``{"id", "reason", "detail"}`` for every question without one.
    """
    teacher = AnnotationTeacher(corpus)
    out = ChainSet()
    for ex in examples:
        try:
            out.chains.append(derive_chain(ex, teacher))
        except Reject as rej:
            out.rejects.append({"id": ex.id, "reason": rej.reason, "detail": rej.detail})
    return out
