"""The paired bootstrap behind benchmarks/paired_gap.py (efficientrag.eval.paired_bootstrap)."""

import math

import pytest

from efficientrag.eval.paired_bootstrap import paired_bootstrap


def test_equal_scores_have_a_zero_gap_whose_interval_holds_zero():
    gap = paired_bootstrap([0.5, 1.0, 0.0], [0.5, 1.0, 0.0], resamples=200)
    assert (gap.mean, gap.low, gap.high) == (0.0, 0.0, 0.0)
    assert gap.at_or_above == 1.0
    assert not gap.excludes_zero


def test_a_constant_gap_has_no_spread_and_excludes_zero():
    gap = paired_bootstrap([1.0, 0.5, 0.75], [0.0, -0.5, -0.25], resamples=200)
    assert gap.mean == pytest.approx(1.0)
    assert gap.low == pytest.approx(1.0) and gap.high == pytest.approx(1.0)
    assert gap.excludes_zero and gap.at_or_above == 1.0


def test_the_pairs_stay_together():
    # Unpaired, these two lists have the same mean and a wide spread; paired, every question gains
    # exactly 0.1, so a bootstrap that drew the two sides apart would show an interval around 0.
    a = [0.1, 0.6, 1.1, 0.3]
    b = [0.0, 0.5, 1.0, 0.2]
    gap = paired_bootstrap(a, b, resamples=500)
    assert gap.low == pytest.approx(0.1) and gap.high == pytest.approx(0.1)


def test_the_interval_matches_the_normal_approximation_on_a_large_sample():
    # 300 questions, 90 gained a point, 30 lost one: mean 0.2, sd sqrt(0.4 - 0.04) = 0.6.
    diffs = [1.0] * 90 + [-1.0] * 30 + [0.0] * 180
    gap = paired_bootstrap(diffs, [0.0] * 300, resamples=20_000, seed=1)
    half = 1.96 * 0.6 / math.sqrt(300)
    assert gap.mean == pytest.approx(0.2)
    assert gap.low == pytest.approx(0.2 - half, abs=0.01)
    assert gap.high == pytest.approx(0.2 + half, abs=0.01)
    assert gap.excludes_zero and gap.at_or_above == 1.0
    assert (gap.n, gap.resamples, gap.confidence) == (300, 20_000, 0.95)


def test_a_small_gap_on_few_questions_straddles_zero():
    # One question of twenty lost: the share of resamples at or above zero is the chance that the
    # draw misses it, (19/20)^20 = 0.358.
    gap = paired_bootstrap([1.0] * 19 + [0.0], [1.0] * 20, resamples=20_000, seed=2)
    assert gap.mean == pytest.approx(-0.05)
    assert gap.low < 0 and gap.high == 0.0 and not gap.excludes_zero
    assert gap.at_or_above == pytest.approx(0.95**20, abs=0.015)


def test_a_narrower_confidence_gives_a_narrower_interval():
    a, b = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    wide = paired_bootstrap(a, b, confidence=0.95, resamples=5_000)
    narrow = paired_bootstrap(a, b, confidence=0.5, resamples=5_000)
    assert wide.low < narrow.low <= narrow.high < wide.high


def test_the_seed_makes_it_reproducible():
    a, b = [1.0, 0.0, 0.5, 1.0, 0.0], [0.0, 0.5, 0.5, 1.0, 1.0]
    assert paired_bootstrap(a, b, seed=3) == paired_bootstrap(a, b, seed=3)
    draws = {
        (g.low, g.high, g.at_or_above)
        for g in (paired_bootstrap(a, b, seed=s, resamples=50) for s in range(6))
    }
    assert len(draws) > 1


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "words"),
    [
        ([1.0], [1.0, 0.0], {}, "1 scores against 2"),
        ([], [], {}, "no questions"),
        ([float("nan")], [0.0], {}, "not a finite number"),
        ([1.0], [0.0], {"resamples": 0}, "resamples must be at least 1"),
        ([1.0], [0.0], {"confidence": 1.0}, "confidence must be in (0, 1)"),
    ],
)
def test_bad_input_is_refused_by_name(a, b, kwargs, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        paired_bootstrap(a, b, **kwargs)


def test_numpy_arrays_are_accepted_like_lists():
    import numpy as np

    a, b = [1.0, 0.0, 0.5], [0.0, 0.0, 1.0]
    assert paired_bootstrap(np.array(a), np.array(b), resamples=100) == paired_bootstrap(a, b, resamples=100)
