"""What the early-exit benchmarks count beside the library's rule: the full-depth run's kept chunks
that left early in the exit run (the heads' error where it costs a chunk), and the pairs judged in
full and left early."""

BENCHMARK = "exit_options"  # the conftest fixture `bench` imports it


def _record(kept, hops):
    return {
        "retrieved_ids": kept,
        "trace": {
            "hops": [
                {"hits": [[{"id": cid, "tag": "terminate", **extra} for cid, extra in hits]]} for hits in hops
            ]
        },
    }


def test_kept_chunks_lost_early_are_read_from_the_traces(bench):
    full = [_record(["a", "b"], [[("a", {}), ("b", {}), ("c", {})]])]
    early = [_record(["a", "c"], [[("a", {}), ("b", {"exited_at": 2}), ("c", {"exited_at": 4})]])]
    # b was kept at full depth, left early and is not kept: one of the two kept chunks lost.
    assert bench.kept_lost_early(full, early) == 50.0
    assert bench.kept_lost_early(full, full) == 0.0


def test_pairs_in_full_and_left_early_are_read_from_the_counters(bench):
    counted = [
        {"counters": {"labeler_pairs": 30.0, "exited_pairs": 20.0}},
        {"counters": {"labeler_pairs": 20.0}},
    ]
    # 10 and 20 judged in full (mean 15, median 15), 20 and 0 left early (mean 10).
    assert bench.pair_cell(counted) == "15.0 / 10.0 (15)"
