"""The rollout benchmark's reading of a burst: statuses counted, the 503s' Retry-After summarized."""

from __future__ import annotations

BENCHMARK = "serve_rollout"


def test_a_burst_is_summarized_by_status_and_retry_after(bench):
    replies = [(200, None), (503, "4"), (503, "10"), (503, "6"), (504, None), (0, None)]
    s = bench.summarize(replies, 2.5)
    assert s["statuses"] == {0: 1, 200: 1, 503: 3, 504: 1}
    assert (s["retry_median"], s["retry_max"], s["seconds"]) == (6, 10, 2.5)
    assert bench.summarize([(200, None)], 1.0)["retry_max"] is None
