"""Per-question scores of prediction records, the paired gap's verdict, and side-by-side timing:
the pieces every comparison benchmark reads its tables from."""

from __future__ import annotations

import pytest

from efficientrag.eval.paired_bootstrap import paired_bootstrap
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.eval.side_by_side import time_methods


def test_scores_read_each_question_at_its_own_cut_off():
    records = [
        {"id": "1", "retrieved_ids": ["g1", "n", "g2"], "gold_chunk_ids": ["g1", "g2"]},
        {"id": "2", "retrieved_ids": ["n", "g1"], "gold_chunk_ids": ["g1"]},
    ]
    assert question_scores(records) == [(100.0, 100.0), (100.0, 100.0)]
    assert question_scores(records, lambda r: 2 if r["id"] == "1" else 1) == [(50.0, 0.0), (0.0, 0.0)]
    assert mean([]) == 0.0 and mean([1.0, 2.0]) == 1.5


def test_the_gap_cell_says_tie_unless_the_interval_excludes_zero():
    assert paired_bootstrap([1.0] * 30, [0.0] * 30, resamples=200).cell().endswith("above")
    assert paired_bootstrap([0.0] * 30, [1.0] * 30, resamples=200).cell().endswith("below")
    tie = paired_bootstrap([1.0, 0.0] * 15, [0.0, 1.0] * 15, resamples=200)
    assert tie.cell().endswith("tie") and tie.verdict == "tie" and not tie.excludes_zero
    assert paired_bootstrap([1.0] * 30, [0.0] * 30, resamples=200).cell() == "+1.0 [+1.0, +1.0] above"


def test_methods_are_timed_on_every_item_after_a_warm_up_batch_each_in_a_rotating_order():
    calls: dict[str, list[list[int]]] = {"a": [], "b": []}
    order: list[str] = []

    def method(name):
        return lambda batch: (calls[name].append(batch), order.append(name))

    seconds = time_methods({k: method(k) for k in calls}, list(range(5)), batch_size=2)
    assert set(seconds) == {"a", "b"} and all(s >= 0 for s in seconds.values())
    assert calls["a"] == [[0, 1], [0, 1], [2, 3], [4]] == calls["b"]
    # Both warm up, then each batch by both, the first method of a batch rotating.
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]
    with pytest.raises(ValueError, match="nothing to time"):
        time_methods({"a": calls["a"].append}, [])
