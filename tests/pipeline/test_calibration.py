"""Per-hop Platt scaling (efficientrag.pipeline.calibration): fitted on judgements with gold flags,
it recovers the map that made them, keeps each hop's order, and lowers the calibration error."""

from __future__ import annotations

import math
import random

import pytest

from efficientrag.pipeline.budget import judgements_from_trace
from efficientrag.pipeline.calibration import (
    Judged,
    calibrate,
    calibration_error,
    fit_hop_calibration,
    judged_items,
)

TRUE = [[1.5, 0.5], [0.7, -1.5]]  # hop 0 under-confident, hop 1 over-confident


def draws(n: int, seed: int = 0) -> list[Judged]:
    """Judgements whose gold flag follows ``calibrate(p, hop, TRUE)`` exactly."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        hop = i % 3  # hop 2 shares hop 1's pair
        p = rng.uniform(0.01, 0.99)
        out.append(Judged(hop, p, rng.random() < calibrate(p, hop, TRUE)))
    return out


def test_the_fit_recovers_the_pairs_that_made_the_data():
    pairs = fit_hop_calibration(draws(12000), max_hops=2)
    assert len(pairs) == 2
    for got, want in zip(pairs, TRUE, strict=True):
        assert got == pytest.approx(want, abs=0.15)


def test_calibration_lowers_each_hops_error_and_keeps_its_order():
    data = draws(6000, seed=1)
    pairs = fit_hop_calibration(data, max_hops=2)
    raw, fitted = calibration_error(data, None), calibration_error(data, pairs)
    assert set(raw) == {0, 1, 2}
    for hop in raw:
        assert fitted[hop]["ece"] < raw[hop]["ece"] / 2
        assert fitted[hop]["gold_rate"] == raw[hop]["gold_rate"]
        assert fitted[hop]["mean_score"] == pytest.approx(fitted[hop]["gold_rate"], abs=0.03)
    probs = sorted(d.prob for d in data[:200])
    for hop in range(3):
        scored = [calibrate(p, hop, pairs) for p in probs]
        assert scored == sorted(scored)


def test_a_hop_with_too_few_judgements_shares_the_pair_before_it():
    data = [d for d in draws(3000) if d.hop == 0] + [Judged(1, 0.9, True)] * 10
    pairs = fit_hop_calibration(data, max_hops=3)
    assert len(pairs) == 1  # hop 1 has 10 judgements, all gold: hops 1+ use hop 0's pair
    assert calibrate(0.8, 2, pairs) == calibrate(0.8, 0, pairs)
    with pytest.raises(ValueError, match="first hop has 10 judgements"):
        fit_hop_calibration([Judged(0, 0.5, True)] * 10)


def test_a_slope_below_zero_is_kept_positive():
    data = [Judged(0, p / 100, p < 50) for p in range(1, 100)] * 2  # gold where the Labeler says no
    ((a, _),) = fit_hop_calibration(data, max_hops=1)
    assert a > 0


def test_judged_items_reads_each_hop_of_a_trace():
    hops = [
        {
            "hits": [
                [
                    {"id": "a", "score": 1, "seen": False, "tag": "continue", "continue_prob": 0.9},
                    {"id": "b", "score": 1, "seen": False, "tag": "terminate", "continue_prob": 0.1},
                ]
            ]
        },
        {
            "hits": [
                [
                    {"id": "b", "score": 1, "seen": False, "tag": "continue", "continue_prob": 0.6},
                    {"id": "a", "score": 1, "seen": True},
                    {"id": "c", "score": 1, "seen": False, "unjudged": True},
                ]
            ]
        },
    ]
    j = judgements_from_trace(hops)
    items = judged_items(j.by_hop, ["b"], j.rank_by_hop)
    assert sorted((i.hop, i.prob, i.gold, i.rank) for i in items) == [
        (0, 0.1, True, 1),
        (0, 0.9, False, 0),
        (1, 0.6, True, 0),
    ]


def test_calibrate_is_the_logistic_of_the_mapped_logit():
    assert calibrate(0.5, 0, [[1.0, 0.0]]) == pytest.approx(0.5)
    assert calibrate(0.2, 5, [[1.0, 0.0], [2.0, 1.0]]) == pytest.approx(
        1 / (1 + math.exp(-(2 * math.log(0.25) + 1)))
    )
    assert 0.0 < calibrate(0.0, 0, [[5.0, -40.0]]) < 1e-20  # no overflow at the ends
    assert calibrate(1.0, 0, [[5.0, 40.0]]) == pytest.approx(1.0)


def test_the_rank_coefficient_is_fitted_when_asked():
    rng = random.Random(2)
    truth = [[1.0, 0.5, -1.2]]
    data = []
    for _ in range(8000):
        p, rank = rng.uniform(0.05, 0.95), rng.randrange(20)
        data.append(Judged(0, p, rng.random() < calibrate(p, 0, truth, rank), rank))
    (fitted,) = fit_hop_calibration(data, max_hops=1, with_rank=True)
    assert fitted == pytest.approx(truth[0], abs=0.15)
    (plain,) = fit_hop_calibration(data, max_hops=1)
    assert len(plain) == 2

    def log_loss(cal):
        return -sum(
            math.log(q if d.gold else 1 - q) for d in data for q in [calibrate(d.prob, 0, cal, d.rank)]
        )

    assert log_loss([fitted]) < log_loss([plain]) - 100  # the rank tells gold apart; ECE cannot see that
