"""Load shedding that needs no deadline from the caller (``serve.controlled_delay``, the batcher's
order under overload), and an idle server that never refuses (``serve.admission``): as plain
functions and on a ``MicroBatcher`` over a fake batch function the test holds."""

from __future__ import annotations

import asyncio
import math
import threading
import time

import pytest

pytest.importorskip("prometheus_client")

from efficientrag.serve.admission import (  # noqa: E402
    BatchCost,
    DeadlineImpossible,
    Overloaded,
    RateMeter,
    Shed,
    admit,
    admit_within_target,
)
from efficientrag.serve.batcher import BULK, OPEN, Caller, MicroBatcher  # noqa: E402
from efficientrag.serve.controlled_delay import ControlledDelay  # noqa: E402
from efficientrag.serve.metrics import Metrics  # noqa: E402

# The warm-up of a machine busy with something else: 7.8 s a batch and 9.6 s a question.
STALE = BatchCost(fixed_s=7.8, per_question_s=9.6, batch=32)


def test_a_burst_is_not_overload_a_standing_queue_is_and_a_quiet_interval_ends_it():
    delay = ControlledDelay(target_s=2.0, interval_s=4.0)
    delay.observe(1.0, now=10.0)
    delay.observe(None, now=11.0)  # the queue drained: a burst
    assert not delay.overloaded()
    delay.observe(3.0, now=20.0)  # above the target since t=19
    delay.observe(6.0, now=22.9)
    assert not delay.overloaded()  # 3.9 s of an interval of 4
    delay.observe(7.0, now=23.0)
    assert delay.overloaded()
    # It stays while callers are refused, even when the oldest waiting one is young again.
    delay.refused(now=25.0)
    delay.observe(0.5, now=28.5)
    assert delay.overloaded()
    delay.observe(0.5, now=29.0)  # an interval (from t=25) with no one refused: it fits again
    assert not delay.overloaded()
    # A caller refused and told to come back in 10 s keeps the overload until an interval after.
    delay.observe(9.0, now=40.0)
    delay.observe(9.0, now=44.0)
    assert delay.overloaded()
    delay.refused(now=44.5, retry_after_s=10.0)
    delay.observe(0.1, now=57.0)
    assert delay.overloaded()
    delay.observe(0.1, now=58.5)
    assert not delay.overloaded()
    delay.observe(1.0, now=30.0)
    assert not delay.overloaded()


def test_under_overload_a_request_without_deadline_must_fit_the_target():
    cost = BatchCost(fixed_s=0.5, per_question_s=0.25, batch=32)
    args = {"cost": cost, "busy_s": 1.0, "window_s": 0.01, "target_s": 3.0, "running": True}
    admit_within_target(questions=1, ahead=4, **args)  # 1 + 0.01 + 0.5 + 5 x 0.25 = 2.76 s
    with pytest.raises(Shed) as shed:
        admit_within_target(questions=1, ahead=5, **args)  # 3.01 s: just over
    assert shed.value.field == "queue" and shed.value.wait_s == pytest.approx(3.01 - 3.0)
    assert "the running batch and the 5 questions ahead" in str(shed.value)
    admit_within_target(questions=1, ahead=60, **{**args, "cost": None})  # nothing measured yet
    admit_within_target(questions=40, ahead=0, **{**args, "running": False})  # idle


def test_an_idle_server_admits_whatever_its_last_estimate_says():
    kw = {"max_queue": 100, "cost": STALE, "busy_s": 0.0, "window_s": 0.01}
    admit(questions=1, queued=0, deadline_s=25.0, running=False, **kw)  # 17.4 s planned, 25 s deadline
    admit(questions=5, queued=0, deadline_s=2.0, running=False, **kw)
    with pytest.raises(DeadlineImpossible) as inside_window:  # no server of these settings meets it
        admit(questions=1, queued=0, deadline_s=0.005, running=False, **kw)
    assert inside_window.value.field == "deadline_ms" and inside_window.value.retry_after_s is None
    # Busy, the same estimate refuses; a refusal names a running batch only where one runs.
    with pytest.raises(Overloaded) as busy:
        admit(questions=1, queued=0, deadline_s=25.0, running=True, **kw)
    assert "the running batch" in str(busy.value)
    with pytest.raises(Overloaded) as queued:
        admit(questions=1, queued=3, deadline_s=25.0, running=False, **kw)
    assert "running batch" not in str(queued.value) and "the 3 questions ahead" in str(queued.value)


def test_the_estimate_follows_fresh_batches_within_a_few():
    meter = RateMeter()
    meter.record(1, STALE.seconds(1))  # the warm-up, under someone else's load
    meter.record(4, STALE.seconds(4))
    for size in (1, 2, 1, 2):  # the load went away: 0.2 s + 0.1 s a question
        meter.record(size, 0.2 + 0.1 * size)
    cost = meter.cost(32)
    assert cost is not None and cost.seconds(1) < 0.25 * STALE.seconds(1)


def held_run():
    """A batch function that records each batch and holds the one of ``["blocker"]`` until the
    gate opens; its results are the questions upper-cased."""
    gate, ran = threading.Event(), []

    def run(key, questions, stop):
        ran.append(list(questions))
        if questions == ["blocker"]:
            gate.wait(10)
        return [q.upper() for q in questions]

    return gate, ran, run


def _batcher(run, *, max_batch: int = 4, target_s: float = 0.2, interval_s: float = 0.2) -> MicroBatcher:
    return MicroBatcher(
        run, max_batch, 0.0, 100, Metrics(), ControlledDelay(target_s=target_s, interval_s=interval_s)
    )


async def _until(check, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def test_under_overload_the_newest_go_first_those_left_past_the_target_are_sent_back_bulk_waits():
    gate, ran, run = held_run()

    async def scenario() -> dict:
        batcher = _batcher(run)
        await batcher.start()
        batcher.meter.record(1, 0.001)  # a batch costs next to nothing: everything fits the target
        inf = math.inf

        def submit(questions: list[str], kind: str, deadline: float = inf) -> asyncio.Task:
            caller = Caller(deadline=time.monotonic() + deadline, kind=kind)
            return asyncio.create_task(batcher.submit((), questions, caller))

        blocker = submit(["blocker"], "timed", 30.0)
        await _until(lambda: batcher._running is not None, "the blocker to run")
        stale = [submit([f"stale{i}"], OPEN) for i in range(5)]
        rollout = submit([f"bulk{i}" for i in range(6)], BULK)
        await asyncio.sleep(0.5)  # the oldest waits past the target for longer than the interval
        fresh = submit(["fresh"], OPEN)
        await asyncio.sleep(0.01)
        overloaded = batcher.delay.overloaded()
        gate.set()
        results = await asyncio.gather(blocker, *stale, rollout, fresh, return_exceptions=True)
        await batcher.stop()
        return {"overloaded": overloaded, "results": results}

    out = asyncio.run(scenario())
    blocker, *stale, rollout, fresh = out["results"]
    assert out["overloaded"]
    assert blocker == ["BLOCKER"] and fresh == ["FRESH"]
    # The first batch after the blocker: the newest open requests, newest first (max_batch 4); the
    # two it left, waiting past the target, are sent back without being computed.
    assert ran[0] == ["blocker"] and ran[1] == ["fresh", "stale4", "stale3", "stale2"]
    assert stale[2:] == [["STALE2"], ["STALE3"], ["STALE4"]]
    assert all(isinstance(r, Shed) and r.field == "queue" and r.wait_s is not None for r in stale[:2])
    assert not any(q in ("stale0", "stale1") for batch in ran for q in batch)
    # The rollout is never sent back: answered whole, after the open requests.
    assert rollout == [f"BULK{i}" for i in range(6)]
    assert [q for batch in ran[2:] for q in batch] == [f"bulk{i}" for i in range(6)]


def test_under_overload_what_cannot_meet_the_target_is_refused_at_once_and_a_rollout_is_not():
    gate, ran, run = held_run()

    async def scenario() -> dict:
        batcher = _batcher(run)
        await batcher.start()
        batcher.meter.record(1, 0.001)
        now = time.monotonic
        blocker = asyncio.create_task(batcher.submit((), ["blocker"], Caller(deadline=now() + 30)))
        await _until(lambda: batcher._running is not None, "the blocker to run")
        waiting = asyncio.create_task(batcher.submit((), ["waiting"], Caller(deadline=math.inf, kind=OPEN)))
        await asyncio.sleep(0.5)
        # The server has learnt that a question takes a second: nothing more fits 0.2 s.
        batcher.meter = RateMeter()
        batcher.meter.record(1, 1.0)
        started = time.monotonic()
        with pytest.raises(Shed):
            await batcher.submit((), ["refused"], Caller(deadline=math.inf, kind=OPEN))
        refused_in = time.monotonic() - started
        rollout = asyncio.create_task(
            batcher.submit((), [f"bulk{i}" for i in range(8)], Caller(deadline=math.inf, kind=BULK))
        )
        await asyncio.sleep(0.01)
        queued = batcher.queued
        gate.set()
        results = await asyncio.gather(blocker, waiting, rollout, return_exceptions=True)
        await batcher.stop()
        return {"refused_in": refused_in, "queued": queued, "results": results}

    out = asyncio.run(scenario())
    assert out["refused_in"] < 0.5  # at once: not queued
    assert out["queued"] == 1 + 8  # the waiting one and the rollout
    assert out["results"][2] == [f"BULK{i}" for i in range(8)]
    assert not any("refused" in batch for batch in ran)
