"""A trace's seconds per stage, summed over hops and questions, as the cost benchmarks read them."""

import pytest

from efficientrag.pipeline.trace import Hop, stage_seconds


def test_stage_seconds_sum_every_hop_and_count_an_unsplit_search():
    split = Hop(0, ["q"], [[]], [], {"encode": 0.1, "search": 0.2, "labeler": 0.3, "filter": 0.05})
    unsplit = Hop(1, ["q"], [[]], [], {"retrieval": 0.4, "labeler": 0.2})
    seconds = stage_seconds([[split, unsplit], [split]])
    assert seconds == pytest.approx(
        {"encode": 0.2, "search": 0.8, "labeler": 0.8, "filter": 0.1, "rerank": 0.0}
    )
