"""``pair_cost.py``'s rule, fixed before any run: the fewest mean Labeler pairs among the candidates
within the tolerance of today's validation score, today's setting when none is."""

BENCHMARK = "pair_cost"  # the conftest fixture `bench` imports it


def _records(recall_hits: list[int], pairs: float) -> list[dict]:
    return [
        {
            "retrieved_ids": ["g1", "g2"][:hits] + ["x"],
            "gold_chunk_ids": ["g1", "g2"],
            "counters": {"labeler_pairs": pairs},
        }
        for hits in recall_hits
    ]


def test_the_cheapest_setting_within_the_tolerance_is_chosen(bench):
    today = bench.TODAY
    runs = {
        today: _records([2, 2, 2, 1], 28.0),  # score 81.25
        "later hops top 6": _records([2, 2, 2, 1], 22.0),  # the same score, fewer pairs
        "later hops top 4": _records([2, 2, 1, 1], 17.0),  # 62.5: far below
        "pair budget 20": _records([2, 2, 2, 1], 20.0),  # the same score, fewest pairs within
    }
    assert bench.score(runs[today]) == 81.25
    assert bench.choose(runs, tolerance=1.0) == "pair budget 20"
    # Nothing cheaper within the tolerance: today's setting stays.
    runs = {today: runs[today], "later hops top 4": runs["later hops top 4"]}
    assert bench.choose(runs, tolerance=1.0) == today
    # A wide tolerance lets the cheapest in.
    assert bench.choose(runs, tolerance=20.0) == "later hops top 4"


def test_the_table_has_one_cell_per_column_with_and_without_timings(bench):
    today, cheap = bench.TODAY, "later hops top 6"
    runs = {today: _records([2, 1] * 20, 28.0), cheap: _records([2, 2] * 20, 20.0)}
    args = type("Args", (), {"questions": 40, "tolerance": 1.0, "resamples": 200, "models": "m"})()
    for seconds in ({}, {"none": {today: 0.3, cheap: 0.2}, "bf16": {today: 0.2, cheap: 0.1}}):
        lines = bench.render(args, {"validation": runs, "report": runs}, cheap, seconds, ".", ".")
        table = [line for line in lines if line.startswith("|") and not line.startswith("|---")]
        widths = {line.count("|") for line in table}
        assert len(widths) == 1, table
