"""Micro-batching: concurrent requests gathered into ``retrieve_batch`` calls, and no work for callers
that left.

The loop is far cheaper per question in a batch (every model call and search is batched across
questions), so a request waits at most ``max_wait_ms`` for others to join it, and a batch takes at
most ``max_batch`` questions. Only requests with the same loop settings share a batch (the settings
key). A request with more questions than one batch holds (a Search-R1 rollout sends hundreds) is
split into pieces of ``max_batch``, queued in order and answered together, under the request's one
deadline. One worker thread runs the batches, one at a time: the models and the index are not
shared between threads, and the event loop stays free to accept and refuse.

Every request is a ``Caller``: its deadline, and whether its client is still connected. Before it is
queued, ``admission.admit`` refuses what the queue ahead would make late (503 + Retry-After) and
what is past ``max_queue``. Once queued:

- its deadline passing drops its pieces from the queue (``DeadlineExceeded``, 504);
- its client leaving (``leave``, from the connection's ``http.disconnect``) drops them too, before
  any batch takes them;
- a batch whose callers have all left or run out of time stops at its next hop boundary: the
  ``stop`` the batch runs with is asked before every search of the loop (``service.Service.run``);
- a batch that ends with some of its callers gone computed their questions for nobody.

Requests come in three kinds (``Caller.kind``): ``timed`` ones carry a deadline; ``open`` ones name
none and are few questions (an RL trainer's one-query call: its client has a timeout the server is
not told); ``bulk`` ones name none and are many (a Search-R1 rollout's batch: its client waits for
it however long it takes). While the queue is overloaded (``controlled_delay``), batches are taken
timed requests first (oldest first: they were admitted on that order), then open ones newest first,
then bulk ones; an open request that a batch leaves waiting when it has waited past the target is
sent back (``Shed``, 503 + Retry-After). Otherwise every request is taken first in, first out.

Each of these is counted by stage in ``efficientrag_abandoned_total{stage,reason}`` (``queued``,
``hop``, ``finished``; ``gone`` or ``deadline``), in questions. The results of a batch are the
library's own, so a reply equals a one-at-a-time call's: the same chunks, order, hops and tags,
and the same probabilities and scores up to float32 noise (another batch shape adds its sums in
another order).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from efficientrag.errors import EfficientRAGError
from efficientrag.serve.admission import (
    BatchCost,
    RateMeter,
    RetrySlots,
    Shed,
    admit,
    admit_within_target,
    batch_room,
    running_left,
)
from efficientrag.serve.backend import BatchStopped
from efficientrag.serve.controlled_delay import ControlledDelay
from efficientrag.serve.metrics import Metrics

log = logging.getLogger(__name__)

# run(key, questions, stop): one batch in the worker thread; ``stop()`` says whether to give up.
RunBatch = Callable[[Hashable, list[str], Callable[[], bool]], list[Any]]

GONE, DEADLINE = "gone", "deadline"
# Why a queued request left without being computed, beside those: sent back under overload.
SENT_BACK = "sent_back"
# Caller kinds: a deadline of its own; none and few questions; none and many (a rollout's batch).
TIMED, OPEN, BULK = "timed", "open", "bulk"


class DeadlineExceeded(EfficientRAGError):
    """The request's deadline passed; ``running`` says whether a batch had taken it."""

    def __init__(self, seconds: float, running: bool) -> None:
        self.seconds = seconds
        self.running = running
        where = "while its batch ran" if running else "before a batch took it"
        super().__init__(f"no answer within {seconds * 1000:.0f} ms (the deadline passed {where})")


class CallerGone(EfficientRAGError):
    """The request's client closed its connection; nobody will read a reply."""


@dataclass(eq=False)
class Caller:
    """One request's stake in the queue. ``deadline``: ``time.monotonic()`` seconds by which it must
    be answered. ``kind``: ``TIMED``, ``OPEN`` or ``BULK`` (the module's docstring). ``gone``: its
    client disconnected (set on the event loop, read by the worker)."""

    deadline: float
    kind: str = TIMED
    gone: bool = False
    future: asyncio.Future | None = None
    jobs: list[_Job] = field(default_factory=list)
    parts_left: int = 0

    def abandoned(self, now: float) -> bool:
        return self.gone or now >= self.deadline

    @property
    def reason(self) -> str:
        return GONE if self.gone else DEADLINE


@dataclass(eq=False)
class _Job:
    """One piece of a request: at most ``max_batch`` of its questions."""

    key: Hashable
    questions: list[str]
    caller: Caller
    arrived: float
    started: bool = False
    dropped: bool = False
    result: list[Any] = field(default_factory=list)


@dataclass
class MicroBatcher:
    """``run(key, questions, stop)`` is called in the worker thread with one batch of same-key
    questions; it raises ``BatchStopped`` when ``stop()`` said to give up."""

    run: RunBatch
    max_batch: int
    max_wait_s: float
    max_queue: int
    metrics: Metrics
    delay: ControlledDelay
    meter: RateMeter = field(default_factory=RateMeter)
    slots: RetrySlots = field(default_factory=RetrySlots)
    _pending: deque[_Job] = field(default_factory=deque)
    _queued: int = 0
    _running: tuple[int, float] | None = None  # (questions, time.monotonic() it started)

    async def start(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="efficientrag-batch")
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._dispatch(), name="efficientrag-batcher")

    async def stop(self) -> None:
        """After the server has drained its requests: stop taking batches, let the running one end."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._executor.shutdown(wait=True)

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def cost(self) -> BatchCost | None:
        """What a batch costs this server lately (``admission.BatchCost``; None before the first)."""
        return self.meter.cost(self.max_batch)

    def busy_s(self, now: float) -> float:
        """Seconds the running batch still needs, at the measured cost (0 when idle or unmeasured)."""
        cost = self.cost
        if self._running is None or cost is None:
            return 0.0
        size, started = self._running
        return running_left(cost, size, now - started)

    def admitted_s(self, now: float, *, without_bulk: bool = False) -> float:
        """Seconds the server needs for the work it has admitted: the running batch's rest and the
        queue, at the measured cost (0 when unmeasured). ``without_bulk``: the work a caller without
        a deadline waits for under overload, which is served before every rollout's batch."""
        cost = self.cost
        if cost is None:
            return 0.0
        queued = self._queued
        if without_bulk:
            queued -= sum(len(j.questions) for j in self._pending if j.caller.kind == BULK)
        return self.busy_s(now) + cost.seconds(queued)

    async def warm_up(self, key: Hashable, questions: list[str]) -> None:
        """Run ``questions`` alone and then all together before serving, and record what the two
        batches cost: a cold server plans its first requests with a measured cost instead of
        admitting whatever fits its queue (the running batches then replace it in the window)."""
        loop = asyncio.get_running_loop()
        for batch in (questions[:1], questions[: self.max_batch]):
            started = time.monotonic()
            await loop.run_in_executor(self._executor, self.run, key, batch, lambda: False)
            self.meter.record(len(batch), time.monotonic() - started)
        cost = self.cost
        if cost is not None:
            self.metrics.cost_fixed.set(cost.fixed_s)
            self.metrics.cost_per_question.set(cost.per_question_s)

    def admit(self, questions: int, caller: Caller, now: float) -> None:
        """Raise ``admission.Refused`` unless ``questions`` of ``caller`` may be queued now: the cap
        and the deadline for all, and under overload the queue's target for an open request."""
        self._observe(now)
        running = self._running is not None
        deadline_s = caller.deadline - now
        cost, busy = self.cost, self.busy_s(now)
        admit(
            questions=questions,
            queued=self._queued,
            max_queue=self.max_queue,
            deadline_s=deadline_s,
            cost=cost,
            busy_s=busy,
            window_s=self.max_wait_s,
            running=running,
        )
        if caller.kind == OPEN and self.delay.overloaded():
            ahead = sum(len(j.questions) for j in self._pending if j.caller.kind != BULK)
            try:
                admit_within_target(
                    questions=questions,
                    ahead=ahead,
                    cost=cost,
                    busy_s=busy,
                    window_s=self.max_wait_s,
                    target_s=self.delay.target_s,
                    running=running,
                )
            except Shed:
                self.delay.refused(now)
                raise

    async def submit(self, key: Hashable, questions: list[str], caller: Caller) -> list[Any]:
        """The questions' results, in order. Raises ``admission.Refused`` (not queued, or sent back
        from the queue under overload), ``DeadlineExceeded``, ``CallerGone`` (after ``leave``), or
        what the batch raised."""
        now = time.monotonic()
        self.admit(len(questions), caller, now)
        caller.future = asyncio.get_running_loop().create_future()
        caller.jobs = [
            _Job(key, questions[lo : lo + self.max_batch], caller, now)
            for lo in range(0, len(questions), self.max_batch)
        ]
        caller.parts_left = len(caller.jobs)
        self._pending.extend(caller.jobs)
        self._set_queued(self._queued + len(questions))
        self._wakeup.set()
        left = caller.deadline - now
        try:
            await asyncio.wait_for(asyncio.shield(caller.future), None if math.isinf(left) else left)
        except asyncio.TimeoutError:
            self._drop(caller, DEADLINE)
            raise DeadlineExceeded(caller.deadline - now, any(j.started for j in caller.jobs)) from None
        except asyncio.CancelledError:
            self._drop(caller, GONE)  # the handler was cancelled: nobody waits for it
            raise
        return [r for job in caller.jobs for r in job.result]

    def _observe(self, now: float) -> None:
        """Tell the controlled delay how long the oldest waiting request (not bulk) has waited."""
        oldest = min((j.arrived for j in self._pending if j.caller.kind != BULK), default=None)
        self.delay.observe(None if oldest is None else now - oldest, now)

    def _order(self) -> list[_Job]:
        """The waiting pieces in the order batches take them: first in, first out; under overload
        timed requests first, then open ones newest first, then bulk ones."""
        if not self.delay.overloaded():
            return list(self._pending)
        by_kind: dict[str, list[_Job]] = {TIMED: [], OPEN: [], BULK: []}
        for job in self._pending:
            by_kind[job.caller.kind].append(job)
        return [*by_kind[TIMED], *reversed(by_kind[OPEN]), *by_kind[BULK]]

    def _shed(self, now: float) -> None:
        """Under overload, once a batch is taken: send back each open request it left waiting that
        has waited past the target (with no piece running): 503 + Retry-After, as if refused on
        arrival. One the batch takes is served, however long it waited."""
        if not self.delay.overloaded():
            return
        target = self.delay.target_s
        late = {
            job.caller
            for job in self._pending
            if job.caller.kind == OPEN and not job.dropped and now - job.arrived > target
        }
        for caller in late:
            if any(j.started for j in caller.jobs) or caller.future is None or caller.future.done():
                continue
            self._drop(caller, SENT_BACK)
            self.delay.refused(now)
            caller.future.set_exception(
                Shed(
                    f"the server is overloaded: this request waited over {target:.1f} s in the queue; "
                    "newer requests are served first until the queue drains",
                    self.admitted_s(now, without_bulk=True),
                    field="queue",
                )
            )

    def leave(self, caller: Caller) -> None:
        """The caller's client disconnected: drop its queued pieces, let its batch stop if nobody
        else waits, and end its ``submit`` with ``CallerGone``."""
        if caller.gone or caller.future is None or caller.future.done():
            return
        caller.gone = True
        self.metrics.disconnects.inc()
        self._drop(caller, GONE)
        caller.future.set_exception(CallerGone())

    def _drop(self, caller: Caller, reason: str) -> None:
        """Take the caller's pieces that no batch has taken out of the queue (counted as
        abandoned while queued)."""
        dropped = 0
        for job in caller.jobs:
            if not job.started and not job.dropped:
                job.dropped = True
                self._pending.remove(job)
                dropped += len(job.questions)
        if dropped:
            self._set_queued(self._queued - dropped)
            if reason != SENT_BACK:  # sent back with a 503, counted among the errors
                self.metrics.abandoned.labels("queued", reason).inc(dropped)

    def _set_queued(self, n: int) -> None:
        self._queued = n
        self.metrics.queue_depth.set(n)

    async def _dispatch(self) -> None:
        while True:
            while not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
            self._observe(time.monotonic())
            first = self._order()[0]
            # Wait for others to join, up to max_wait after the first arrived, or until full.
            while self._same_key(first.key) < self.max_batch:
                left = first.arrived + self.max_wait_s - time.monotonic()
                if left <= 0 or first.dropped:
                    break
                self._wakeup.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), left)
            batch = self._take(first.key)
            if batch:
                await self._run(batch)

    def _same_key(self, key: Hashable) -> int:
        return sum(len(j.questions) for j in self._pending if j.key == key)

    def _take(self, key: Hashable) -> list[_Job]:
        """The first same-key pieces (in ``_order``) that fit in one batch: at most ``max_batch``
        questions, and no more than can be answered well before the earliest deadline among them
        (``admission.batch_room``; the first piece always goes)."""
        now, cost = time.monotonic(), self.cost
        self._observe(now)
        taken: list[_Job] = []
        size, earliest = 0, float("inf")
        for job in self._order():
            if job.dropped or job.key != key:
                continue
            if job.caller.abandoned(now):  # its own timeout would drop it a moment later
                self._drop(job.caller, job.caller.reason)
                continue
            sooner = min(earliest, job.caller.deadline - now)
            if taken and size + len(job.questions) > batch_room(cost, sooner, self.max_batch):
                break
            taken.append(job)
            size += len(job.questions)
            earliest = sooner
        for job in taken:
            job.started = True
            self._pending.remove(job)
        self._set_queued(self._queued - size)
        self._shed(now)
        self._observe(now)
        return taken

    async def _run(self, batch: list[_Job]) -> None:
        questions = [q for job in batch for q in job.questions]
        self.metrics.batch_size.observe(len(questions))
        self.metrics.in_flight.set(len(questions))
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        self._running = (len(questions), started)

        def stop() -> bool:  # asked in the worker thread at every hop boundary
            now = time.monotonic()
            return all(job.caller.abandoned(now) for job in batch)

        try:
            results = await loop.run_in_executor(self._executor, self.run, batch[0].key, questions, stop)
        except BatchStopped:
            for job in batch:
                self.metrics.abandoned.labels("hop", job.caller.reason).inc(len(job.questions))
            return
        except Exception as exc:
            self._fail(batch, exc)
            return
        finally:
            self._running = None
            self.metrics.in_flight.set(0)
            self.metrics.batch_seconds.inc(time.monotonic() - started)
        self.meter.record(len(questions), time.monotonic() - started)
        self.metrics.rate.set(self.meter.rate or 0.0)
        cost = self.cost
        if cost is not None:
            self.metrics.cost_fixed.set(cost.fixed_s)
            self.metrics.cost_per_question.set(cost.per_question_s)
        self.metrics.questions.inc(len(questions))
        self._deliver(batch, results)

    def _deliver(self, batch: list[_Job], results: list[Any]) -> None:
        now, at = time.monotonic(), 0
        for job in batch:
            job.result = results[at : at + len(job.questions)]
            at += len(job.questions)
            caller = job.caller
            if caller.abandoned(now):
                self.metrics.abandoned.labels("finished", caller.reason).inc(len(job.questions))
                continue
            if caller.future is None or caller.future.done():
                continue  # another piece of the request failed: its error is the reply
            caller.parts_left -= 1
            if caller.parts_left == 0:
                caller.future.set_result(None)

    def _fail(self, batch: list[_Job], exc: Exception) -> None:
        """The batch raised: its callers get the error, and their other pieces leave the queue
        (an answer with a hole in it is no answer)."""
        for job in batch:
            caller = job.caller
            if caller.future is not None and not caller.future.done():
                caller.future.set_exception(exc)
            for other in caller.jobs:
                if not other.started and not other.dropped:
                    other.dropped = True
                    self._pending.remove(other)
                    self._set_queued(self._queued - len(other.questions))
