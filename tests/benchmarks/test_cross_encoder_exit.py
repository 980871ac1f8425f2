"""The cross-encoder exit benchmark's bookkeeping: layers read from the counters, the options checked."""

import pytest

BENCHMARK = "cross_encoder_exit"  # the conftest fixture `bench` imports it


def test_layers_are_the_counters_or_the_whole_depth_per_pair(bench):
    exited = [{"counters": {"reranked_pairs": 20, "exited_pairs": 12, "encoder_layers": 12 * 2 + 8 * 6}}]
    full = [{"counters": {"reranked_pairs": 20}}]
    assert bench.layers(exited, depth=6) == 72 and bench.layers(full, depth=6) == 120


def test_scores_are_cut_at_k(bench):
    records = [{"retrieved_ids": ["x", "g1", "g2"], "gold_chunk_ids": ["g1", "g2"]}]
    assert bench.at_k(records, 2) == [(50.0, 0.0)] and bench.score(records, 3) == 100.0


@pytest.mark.parametrize("bad", [["--thresholds", "0"], ["--thresholds", "a"], ["--k", "0"]])
def test_bad_options_are_refused(bench, bad):
    with pytest.raises(SystemExit):
        bench.parse_args(bad)
