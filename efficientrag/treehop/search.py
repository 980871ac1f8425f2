"""The tree search: hop 1 retrieves top-K with the question's vector; at every later hop each
candidate kept by the previous layer forms a query (TreeHop(its query, its chunk)), which retrieves
top-K again; the layer's candidates are pruned (:mod:`efficientrag.treehop.pruning`) and the
survivors are output and expanded. The hop count is fixed.

Everything is batched over questions: one FAISS search and one network call per hop for all
questions and queries together. The next query is searched with its L2-normalized copy and passed
on un-normalized, as the network was trained. The result of a question is hop 1's K chunks plus
the survivors of later hops, at most K x hops, in the order they were found.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from efficientrag.setting_fields import bounded, check_settings
from efficientrag.treehop.pruning import LayerDecision, PruningRule, decide_layer

UpdateFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


class VectorIndex(Protocol):
    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class SearchSettings:
    top_k: int = bounded(5, low=1)
    hops: int = bounded(2, low=1)
    rule: PruningRule = "top_k"
    redundancy: bool = True

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class LayerRecord:
    """One hop of one question. ``query_paths[j]``: the rows of the chunks query j was formed from,
    in hop order (``()``: the question). ``rows``/``scores``: ``(queries, k)``, -1 for no hit."""

    hop: int
    query_paths: list[tuple[int, ...]]
    rows: np.ndarray
    scores: np.ndarray
    decision: LayerDecision
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Expansion:
    """One question's tree: what it output, at which hop, and every layer."""

    rows: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    hops: list[int] = field(default_factory=list)
    layers: list[LayerRecord] = field(default_factory=list)


def expand_trees(
    question_vectors: np.ndarray,
    index: VectorIndex,
    update: UpdateFn,
    settings: SearchSettings,
) -> list[Expansion]:
    """Run the tree search for every question (rows of ``question_vectors``)."""
    n = len(question_vectors)
    out = [Expansion() for _ in range(n)]
    seen: list[set[int]] = [set() for _ in range(n)]
    # The frontier: per question, (raw query vector, path of rows it was formed from).
    frontier: list[list[tuple[np.ndarray, tuple[int, ...]]]] = [
        [(np.asarray(v, dtype=np.float32), ())] for v in question_vectors
    ]
    for hop in range(1, settings.hops + 1):
        owners = [(q, j) for q in range(n) for j in range(len(frontier[q]))]
        if not owners:
            break
        raw = np.stack([frontier[q][j][0] for q, j in owners]).astype(np.float32)
        t0 = time.perf_counter()
        scores, rows = index.search(raw if hop == 1 else _normalized(raw), settings.top_k)
        t_search = time.perf_counter() - t0
        next_jobs: list[tuple[int, np.ndarray, tuple[int, ...], int]] = []
        start = 0
        for q in range(n):
            count = len(frontier[q])
            if not count:
                continue
            q_rows, q_scores = rows[start : start + count], scores[start : start + count]
            decision = decide_layer(
                q_rows, q_scores, seen[q], settings.top_k, rule=settings.rule, redundancy=settings.redundancy
            )
            flat_rows, flat_scores = q_rows.ravel(), q_scores.ravel()
            # Within a hop, best score first: a reader of the result sees the surest chunks first.
            for i in sorted(np.flatnonzero(decision.output), key=lambda i: (-flat_scores[i], i)):
                seen[q].add(int(flat_rows[i]))
                out[q].rows.append(int(flat_rows[i]))
                out[q].scores.append(float(flat_scores[i]))
                out[q].hops.append(hop)
            width = q_rows.shape[1]
            for i in np.flatnonzero(decision.expand):
                parent_vec, path = frontier[q][i // width]
                next_jobs.append((q, parent_vec, (*path, int(flat_rows[i])), int(flat_rows[i])))
            out[q].layers.append(
                LayerRecord(
                    hop, [p for _, p in frontier[q]], q_rows, q_scores, decision, {"search": t_search}
                )
            )
            start += count
        t_model = 0.0
        frontier = [[] for _ in range(n)]
        if hop < settings.hops and next_jobs:
            t0 = time.perf_counter()
            parents = np.stack([p for _, p, _, _ in next_jobs])
            chunks = index.chunk_vectors(np.array([r for _, _, _, r in next_jobs], dtype=np.int64))
            nxt = update(parents, chunks)
            t_model = time.perf_counter() - t0
            for (q, _, path, _), vec in zip(next_jobs, nxt, strict=True):
                frontier[q].append((vec, path))
        _share_seconds(
            out, owners, hop, t_search, t_model, [q for q, *_ in next_jobs] if hop < settings.hops else []
        )
    return out


def _normalized(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def _share_seconds(
    out: Sequence[Expansion],
    owners: Sequence[tuple[int, int]],
    hop: int,
    t_search: float,
    t_model: float,
    updated: Sequence[int],
) -> None:
    """Split a hop's batched search and model time over questions by their share of the work
    (``owners``: the question of every searched query; ``updated``: of every next query formed)."""
    queries = Counter(q for q, _ in owners)
    updates = Counter(updated)
    for q, count in queries.items():
        layer = out[q].layers[-1]
        if layer.hop != hop:
            continue
        layer.seconds = {
            "search": t_search * count / len(owners),
            "model": t_model * updates[q] / len(updated) if updated else 0.0,
        }
