"""Which candidates of one tree layer are output and expanded: redundancy and layer-wise top-K.

A layer holds, for one question, every (query, hit) pair of that hop: up to K queries times K hits.
Two rules keep the tree from growing as K^hops:

* *redundancy*: a candidate whose chunk this question already output is dropped (within a layer
  the same chunk found by two queries counts once, at its best score);
* *layer-wise top-K*: of what is left, only the K candidates with the highest retrieval score are
  output and expanded.

``rule="top_k"`` is that intended rule. ``rule="official"`` reproduces the official code's
``_rank_passage_layer`` (``tree_hop/graph.py``), which takes ``argsort`` *indices* for ranks: it
keeps the candidates at the positions where the index of the i-th smallest score falls in the last
K positions, which has little to do with each candidate's own score. It also expands a chunk found
twice in one layer twice, while outputting it once. The published TreeHop numbers presumably come
from this behaviour; it is here to reproduce them, never as a default. ``rule="none"`` keeps every
candidate that survives redundancy (the ablation without layer-wise pruning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from efficientrag.errors import InvalidArgumentError

PruningRule = Literal["top_k", "official", "none"]
PRUNING_RULES = ("top_k", "official", "none")
# The official code's stand-in score (and rank) for a redundant candidate.
OFFICIAL_DUPLICATE_MARK = -5


@dataclass(frozen=True)
class LayerDecision:
    """Per candidate (flat order: query by query, hits in rank order) of one question's layer."""

    output: np.ndarray  # bool: the chunk joins the question's result here (first time)
    expand: np.ndarray  # bool: the candidate forms a query for the next hop
    reason: list[str | None]  # why a candidate was not expanded: "redundant", "pruned", "missing"


def decide_layer(
    rows: np.ndarray,
    scores: np.ndarray,
    seen: set[int],
    top_k: int,
    *,
    rule: PruningRule = "top_k",
    redundancy: bool = True,
) -> LayerDecision:
    """``rows``/``scores``: the flat candidates of one question's layer (row -1: no hit).
    ``seen``: rows this question already output (not modified)."""
    rows = np.asarray(rows, dtype=np.int64).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if rule not in PRUNING_RULES:
        raise InvalidArgumentError(f"pruning rule must be one of {PRUNING_RULES}, got {rule!r}")
    if rule == "official":
        return _official(rows, scores, seen, top_k, redundancy)
    return _intended(rows, scores, seen, top_k, prune=rule == "top_k", redundancy=redundancy)


def _intended(
    rows: np.ndarray, scores: np.ndarray, seen: set[int], top_k: int, *, prune: bool, redundancy: bool
) -> LayerDecision:
    n = len(rows)
    reason: list[str | None] = [None] * n
    alive = rows >= 0
    for i in np.flatnonzero(~alive):
        reason[i] = "missing"
    if redundancy:
        # Best score first, so the copy of a chunk that survives is its best-scored one.
        order = sorted(np.flatnonzero(alive), key=lambda i: (-scores[i], i))
        first: set[int] = set()
        for i in order:
            row = int(rows[i])
            if row in seen or row in first:
                alive[i] = False
                reason[i] = "redundant"
            else:
                first.add(row)
    expand = alive.copy()
    if prune:
        ranked = sorted(np.flatnonzero(alive), key=lambda i: (-scores[i], i))
        for i in ranked[top_k:]:
            expand[i] = False
            reason[i] = "pruned"
    return LayerDecision(_first_of_each_row(rows, expand, seen), expand, reason)


def _official(
    rows: np.ndarray, scores: np.ndarray, seen: set[int], top_k: int, redundancy: bool
) -> LayerDecision:
    n = len(rows)
    duplicate = np.array([redundancy and int(r) in seen for r in rows], dtype=bool)
    marked = scores.copy()
    marked[duplicate] = OFFICIAL_DUPLICATE_MARK
    # The bug, kept on purpose: argsort returns the indices that sort the scores, not the ranks.
    ranks = np.argsort(marked)
    ranks[duplicate] = OFFICIAL_DUPLICATE_MARK
    min_rank = max(int(ranks.max(initial=OFFICIAL_DUPLICATE_MARK)) - top_k + 1, 0)
    expand = (ranks >= min_rank) & (rows >= 0)
    reason: list[str | None] = [
        None if expand[i] else "missing" if rows[i] < 0 else "redundant" if duplicate[i] else "pruned"
        for i in range(n)
    ]
    return LayerDecision(_first_of_each_row(rows, expand, seen), expand, reason)


def _first_of_each_row(rows: np.ndarray, expand: np.ndarray, seen: set[int]) -> np.ndarray:
    """Which expanded candidates join the output: the first of each chunk the question has not
    output yet (a chunk reached by two branches counts once)."""
    output = np.zeros(len(rows), dtype=bool)
    outputted: set[int] = set(seen)
    for i in np.flatnonzero(expand):
        row = int(rows[i])
        if row not in outputted:
            output[i] = True
            outputted.add(row)
    return output
