"""The tree search and its pruning on a hand-built index where every step is known.

Chunks are the 8 unit vectors e0..e7. The update ignores the query and maps a chunk to the unit
vector it "links" to (LINKS), so each next-hop query's hits and scores are fixed by hand:

    question = 0.9 e0 + 0.436 e1                -> hop 1 (K=2): e0 (.9), e1 (.436)
    from e0: 0.8 e3 + 0.6 e4                     -> e3 (.8), e4 (.6)
    from e1: 0.714 e0 + 0.7 e5                   -> e0 (.714, already output), e5 (.7)
    from e3: 0.6 e6 + 0.8 e7;  from e5: e6;  from e4: e7

Layer 2's flat candidates are [e3 .8, e4 .6, e0 .714, e5 .7]. The intended rule drops e0 (already
output) and keeps the two best of the rest: e3 and e5. The official rule ranks by argsort indices:
with e0 marked -5, argsort = [2, 1, 3, 0] -> ranks [2, 1, -5, 0] -> keeps ranks >= 1: e3 and e4
(so the 0.6 candidate beats the 0.7 one).
"""

from __future__ import annotations

import numpy as np
import pytest

from efficientrag.treehop.pruning import decide_layer
from efficientrag.treehop.search import SearchSettings, expand_trees

DIM = 8
LINKS = {
    0: {3: 0.8, 4: 0.6},
    1: {0: np.sqrt(1 - 0.7**2), 5: 0.7},
    3: {6: 0.6, 7: 0.8},
    4: {7: 1.0},
    5: {6: 1.0},
}


def _vec(weights: dict[int, float]) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for i, w in weights.items():
        v[i] = w
    return v


class HandIndex:
    """Exact inner-product search over the unit vectors (the VectorIndex protocol)."""

    def __init__(self) -> None:
        self.matrix = np.eye(DIM, dtype=np.float32)
        self.searched: list[np.ndarray] = []

    def search(self, vectors: np.ndarray, k: int):
        self.searched.append(vectors.copy())
        scores = vectors @ self.matrix.T
        rows = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, rows, axis=1), rows

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray:
        return self.matrix[rows]


def _link(queries: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    # Un-normalized on purpose: the search must normalize the copy it searches with.
    return np.stack([3.0 * _vec(LINKS.get(int(np.argmax(c)), {})) for c in chunks])


QUESTION = _vec({0: 0.9, 1: np.sqrt(1 - 0.81)})


def _run(rule: str, hops: int = 2, redundancy: bool = True, top_k: int = 2):
    index = HandIndex()
    tree = expand_trees(
        QUESTION[None], index, _link, SearchSettings(top_k=top_k, hops=hops, rule=rule, redundancy=redundancy)
    )[0]
    return tree, index


def test_intended_rule_keeps_the_layers_best_scored_new_chunks():
    tree, index = _run("top_k")
    assert tree.rows == [0, 1, 3, 5]
    assert tree.hops == [1, 1, 2, 2]
    np.testing.assert_allclose(tree.scores, [0.9, np.sqrt(0.19), 0.8, 0.7], atol=1e-5)
    layer = tree.layers[1]
    assert layer.query_paths == [(0,), (1,)]
    assert layer.rows.tolist() == [[3, 4], [0, 5]]
    assert layer.decision.expand.tolist() == [True, False, False, True]
    assert layer.decision.reason == [None, "pruned", "redundant", None]
    # Hop-2 queries were searched normalized although the update returned length-3 vectors.
    np.testing.assert_allclose(np.linalg.norm(index.searched[1], axis=1), 1.0, atol=1e-6)


def test_official_rule_reproduces_the_index_as_rank_selection():
    tree, _ = _run("official")
    assert tree.rows == [0, 1, 3, 4]  # e4 (.6) kept over e5 (.7)
    assert tree.layers[1].decision.expand.tolist() == [True, True, False, False]
    # Hop 1 is unaffected: one query, K hits, all kept.
    assert tree.layers[0].decision.expand.tolist() == [True, True]


def test_three_hops_follow_the_kept_branches_only():
    tree, _ = _run("top_k", hops=3)
    # Hop 3 expands e3 and e5 (layer 2's survivors): e3 -> e7 (.8), e6 (.6); e5 -> e6 (1.0).
    layer = tree.layers[2]
    assert layer.query_paths == [(0, 3), (1, 5)]
    assert tree.rows == [0, 1, 3, 5, 6, 7]
    assert tree.hops[-2:] == [3, 3]
    # e6 is found twice in the layer; it is output once, at its best score. e5's query has one
    # non-zero hit; its second (score 0) is e0, output at hop 1.
    np.testing.assert_allclose(tree.scores[-2:], [1.0, 0.8], atol=1e-5)
    assert layer.rows.tolist() == [[7, 6], [6, 0]]
    assert layer.decision.reason == [None, "redundant", None, "redundant"]
    official, _ = _run("official", hops=3)
    assert official.layers[2].query_paths == [(0, 3), (0, 4)]


def test_without_pruning_every_new_candidate_is_kept_and_without_redundancy_repeats_are_expanded():
    tree, _ = _run("none")
    assert tree.rows == [0, 1, 3, 5, 4]
    loose, _ = _run("top_k", redundancy=False)
    # e0 (.714) now competes and wins over e5 (.7); it is expanded again but output only once.
    assert loose.layers[1].decision.expand.tolist() == [True, False, True, False]
    assert loose.rows == [0, 1, 3]


def test_decide_layer_matches_a_hand_computation_with_a_seen_chunk():
    rows = np.array([10, 11, 12, 13, 14, 15])
    scores = np.array([0.9, 0.5, 0.1, 0.8, 0.7, 0.2])
    intended = decide_layer(rows, scores, {10}, 3, rule="top_k")
    assert intended.expand.tolist() == [False, True, False, True, True, False]
    # marked [-5, .5, .1, .8, .7, .2] -> argsort [0, 2, 5, 1, 4, 3] -> ranks [-5, 2, 5, 1, 4, 3]:
    # min rank 5 - 3 + 1 = 3 keeps positions 2, 4, 5 (scores .1, .7, .2).
    official = decide_layer(rows, scores, {10}, 3, rule="official")
    assert official.expand.tolist() == [False, False, True, False, True, True]
    assert official.output.tolist() == official.expand.tolist()
    # A chunk twice in one layer: the official rule may expand both copies, outputs it once.
    dup = decide_layer(np.array([7, 8, 7]), np.array([0.3, 0.2, 0.9]), set(), 3, rule="official")
    assert dup.expand.tolist() == [True, True, True] and dup.output.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="pruning rule"):
        decide_layer(rows, scores, set(), 3, rule="best")  # type: ignore[arg-type]


def test_questions_are_batched_into_one_search_per_hop():
    index = HandIndex()
    other = _vec({5: 1.0})
    trees = expand_trees(np.stack([QUESTION, other]), index, _link, SearchSettings(top_k=2, hops=2))
    assert len(index.searched) == 2  # one call per hop for both questions
    assert index.searched[1].shape[0] == 4  # 2 queries per question at hop 2
    assert trees[0].rows == [0, 1, 3, 5]
    assert trees[1].rows[:1] == [5] and trees[1].hops[0] == 1
