"""Retrieval decisions are read from both active methods' step logs, whatever key each uses."""

import pytest

from efficientrag.eval.trigger_rate import retrieval_decision, trigger_rates


def rec(*steps):
    return {"trace": {"steps": list(steps)}}


def test_dragin_and_flare_decisions_are_both_counted():
    records = [
        rec({"kind": "generate", "triggered": True}, {"kind": "generate", "triggered": False}),
        rec({"kind": "initial_retrieval"}, {"kind": "lookahead", "retrieved": False}),
        rec({"kind": "lookahead", "retrieved": True}, {"kind": "answer_retry", "text": "x"}),
    ]
    steps, questions = trigger_rates(records)
    assert steps == pytest.approx(2 / 4)
    assert questions == pytest.approx(2 / 3)


def test_steps_that_decide_nothing_are_not_decisions():
    assert retrieval_decision({"kind": "initial_retrieval", "retrieved": True}) is None
    assert retrieval_decision({"kind": "lookahead", "retrieved": 0}) is False
    assert retrieval_decision({"kind": "generate", "triggered": 1}) is True


def test_methods_without_decisions_report_none():
    assert trigger_rates([rec({"kind": "initial_retrieval"}), {"trace": None}, {}]) == (None, None)
