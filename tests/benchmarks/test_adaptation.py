"""The adaptation benchmark's report: gains read against Direct-R's curve at equal chunks, the share
of the in-domain gain, and the goal verdicts (issue 30) that its conclusions rest on."""

from __future__ import annotations

from pathlib import Path

import pytest

BENCHMARK = "adaptation"  # the conftest fixture `bench` imports it


# Direct-R's curve: recall rises 10 points per 2 chunks from 50 at 2; all-gold 20 points lower.
DIRECT = {
    "retrieval": {
        str(k): {"recall": 40 + 5 * k, "all_gold": 20 + 5 * k, "answer_recall": 30 + 5 * k}
        for k in (2, 4, 6, 10, 20)
    }
}


def _dev(chunks: float, recall: float, all_gold: float) -> dict:
    run = {"num_chunks": chunks, "recall": recall, "all_gold": all_gold, "answer_recall": 50.0, "n": 10}
    fate = {"gold": 20, "kept": 15, "never_retrieved": 5}
    return {"direct": DIRECT, "efficientrag": {"retrieval": {"all": run}}, "fate": fate}


def _variant(bench, name: str, dev: dict, score: float = 0.0):
    v = bench.Variant(name, Path("l"), Path("f"), dev=dev, score=score)
    v.validation = {"a": {"recall": 1.0, "all_gold": 2.0, "num_chunks": 6.0}}
    return v


def test_gain_is_read_at_the_runs_own_chunk_count(bench):
    from efficientrag.eval import versus_direct

    # At 5 chunks the curve is 65 / 45 (interpolated between 4 and 6).
    g = bench._gain(versus_direct.versus(DIRECT, _dev(5.0, 70.0, 55.0)["efficientrag"]))
    assert g == pytest.approx((5.0, 10.0))
    # Beyond the measured cut-offs there is nothing to compare with.
    far = bench._gain(versus_direct.versus(DIRECT, _dev(40.0, 99.0, 99.0)["efficientrag"]))
    assert all(x != x for x in far)  # nan


def test_goal_needs_half_the_in_domain_gain_on_both_metrics(bench):
    ceiling = (10.0, 20.0)
    un = ("un-adapted", _variant(bench, "u", _dev(6.0, 70.0, 50.0)))  # +0 / +0
    half = ("half", _variant(bench, "h", _dev(6.0, 75.0, 60.0)))  # +5 / +10: exactly half
    short = ("short", _variant(bench, "s", _dev(6.0, 75.0, 59.0)))  # all-gold misses
    top = ("in-domain", _variant(bench, "i", _dev(6.0, 80.0, 70.0)))
    line = bench._goal_line("hotpotqa", [un, half, short, top], ceiling)
    assert "half: reaches half the in-domain gain" in line
    assert "short: misses half the in-domain gain" in line
    # A ceiling with no gain cannot be half-recovered.
    assert "reaches" not in bench._goal_line("musique", [un, half, top], (0.0, 20.0))


def test_2wiki_goal_is_not_worse_than_unadapted(bench):
    un = ("un-adapted", _variant(bench, "u", _dev(6.0, 72.0, 55.0)))
    same = ("same", _variant(bench, "a", _dev(6.0, 72.0, 55.0)))
    worse = ("worse", _variant(bench, "b", _dev(6.0, 73.0, 54.0)))
    top = ("in-domain", _variant(bench, "i", _dev(6.0, 80.0, 70.0)))
    line = bench._goal_line("2wikimultihopqa", [un, same, worse, top], (10.0, 20.0))
    assert "same: not worse than un-adapted" in line
    assert "worse: worse than un-adapted" in line


def test_render_reports_shares_and_flags_a_choice_not_above_unadapted(bench):
    un = _variant(bench, "un-adapted", _dev(6.0, 70.0, 50.0), score=60.0)
    corpus = _variant(bench, "corpus ratio 1.0", _dev(6.0, 75.0, 60.0), score=59.0)
    corpus.params = {"ratio": 1.0}
    top = _variant(bench, "in-domain (ceiling)", _dev(6.0, 80.0, 70.0))
    stats = {"questions": {"2": 3}, "links": 4, "corpus_chunks": 9, "rejects": {}, "rows": {}}
    text = bench.render(
        "hotpotqa",
        ["2wikimultihopqa", "musique"],
        "k10",
        ["top_k=10"],
        un,
        {"corpus": [corpus]},
        {"corpus": corpus},
        top,
        stats,
        {"labeler": {"train": 100}},
        60.0,
    )
    row = next(line for line in text.splitlines() if line.startswith("| option 1: corpus"))
    # +5 / +10 of a +10 / +20 ceiling: half of each.
    assert "+5.00 / +10.00 | 50% / 50% |" in row
    choice = next(line for line in text.splitlines() if line.startswith("| corpus ratio 1.0 |"))
    assert "yes (not above un-adapted)" in choice
    assert "reaches half the in-domain gain" in text
