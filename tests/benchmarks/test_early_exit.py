"""What ``early_exit.py`` counts beside the library's rule: the full-depth run's kept chunks that
left early in the exit run (the heads' error where it costs a chunk)."""

BENCHMARK = "early_exit"  # the conftest fixture `bench` imports it


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
