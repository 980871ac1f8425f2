"""Admission by deadline: the server's measured rate, and what the queue ahead of a request costs it.

A queue sized by hand admits what it cannot serve: under 120 callers with 30 s timeouts the old
server queued requests that waited past their callers' patience and computed answers nobody read
(issue 50). Here every request carries a deadline, and before it is queued the server asks whether
the questions ahead of it, plus its own, can be answered in time at the rate it has been answering
lately. If not, it is refused at once with 503 and a ``Retry-After`` saying when to come back
(``RetrySlots``); if no queue could ever make it (its own questions alone, plus the batching
window, take longer than its deadline), it is refused naming ``deadline_ms``.

The rate is questions per second of the worker's own compute time, per batch, over the last few
batches, and admission plans with the slowest of them, for the running batch, the queue ahead and
the request to be answered within ``ADMIT_WITHIN`` of the deadline. On a machine whose cores are
shared the rate moves with the neighbours' load, and a request admitted on a rate that then falls
runs late, is computed all the same, and gets 504: the slowest rate and the margin err on the side
of refusing. Refusing costs little under overload as long as the worker never runs dry and its
batches stay full, which is what the refused callers' ``Retry-After`` is for: they come back in
groups of a batch's worth (``RetrySlots``, ``batch_target``), each group arriving while the batch
before it runs. The same rate caps how large a batch grows (``batch_room``): a batch is cut where
it would no longer finish before the earliest deadline among its requests, so a request admitted
on time is not made late by those that join its batch after it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

# Batches whose rates are kept: few enough to follow a change of load (a different mix of settings,
# another process taking the cores) within a few batches.
RATE_WINDOW = 8
# Admission plans to answer the running batch, the queue ahead and the request within this fraction
# of its deadline. What that admits is two batches of ``batch_target`` questions: the one running
# and the one waiting behind it, whose first request, when its batch starts, has the time of one
# batch left and more, so the cut to the earliest deadline (``batch_room``) keeps it whole. The rest
# absorbs a rate that falls after a request was admitted (the plan uses the slowest recent batch).
ADMIT_WITHIN = 0.8


class Refused(Exception):
    """A request refused before it was queued. ``wait_s``: the soonest trying again can succeed
    (None: not by waiting; the request itself must change); ``retry_after_s``: the ``Retry-After``
    to send (``RetrySlots`` may make it later)."""

    def __init__(self, message: str, wait_s: float | None, *, field: str) -> None:
        super().__init__(message)
        self.wait_s = wait_s
        self.retry_after_s = None if wait_s is None else _seconds(wait_s)
        self.field = field


class QueueFull(Refused):
    """No room for the request's questions under ``max_queue``."""


class Overloaded(Refused):
    """The queue ahead of the request would make it miss its deadline."""


class DeadlineImpossible(Refused):
    """Even alone, the request's questions take longer than its deadline."""


@dataclass
class RateMeter:
    """Questions per second of the last ``window`` batches (compute time only: the time a batch took
    in the worker, not the time the worker waited for requests); ``rate`` is the slowest of them."""

    window: int = RATE_WINDOW

    def __post_init__(self) -> None:
        self._batches: deque[tuple[int, float]] = deque(maxlen=self.window)

    def record(self, questions: int, seconds: float) -> None:
        if questions > 0 and seconds > 0:
            self._batches.append((questions, seconds))

    @property
    def rate(self) -> float | None:
        """Questions per second, or None before the first batch (nothing is refused by deadline
        then: the queue's hard cap still holds)."""
        if not self._batches:
            return None
        return min(q / s for q, s in self._batches)

    @property
    def mean_rate(self) -> float | None:
        """Questions per second over the same batches taken together: the pace the server keeps,
        which refused callers are sent back at (``RetrySlots``). Spacing them at the slowest
        batch's rate would bring them back slower than the worker drains the queue, leaving it to
        run small batches (at 256 clients on the toy world: 0.82x the 16-client goodput)."""
        if not self._batches:
            return None
        return sum(q for q, _ in self._batches) / sum(s for _, s in self._batches)


def running_left(rate: float, size: int, elapsed_s: float) -> float:
    """Seconds the running batch of ``size`` questions still needs at ``rate`` (0 once it has run
    longer than that: it is about to end, or slower than measured, and no guess is better)."""
    return max(0.0, size / rate - elapsed_s)


def admit(
    *,
    questions: int,
    queued: int,
    max_queue: int,
    deadline_s: float,
    rate: float | None,
    busy_s: float,
    window_s: float,
) -> None:
    """Raise ``Refused`` unless ``questions`` more can be queued and answered within ``deadline_s``.

    Args:
        questions: The request's questions.
        queued: Questions already waiting for a batch.
        max_queue: The queue's hard cap.
        deadline_s: Seconds the request may take from now.
        rate: The measured questions per second (None: not measured yet; only the cap applies).
        busy_s: Seconds the running batch still needs (``running_left``; 0 when idle).
        window_s: The batching window (``max_wait_ms``): the least a request waits for others.
    """
    if queued + questions > max_queue:
        wait = None if rate is None else (queued + questions - max_queue) / rate
        raise QueueFull(
            f"the server is busy: {queued} questions are waiting (at most {max_queue})",
            wait if wait is not None else 1.0,
            field="queue",
        )
    if rate is None:
        return
    alone = window_s + questions / rate
    if alone > deadline_s:
        raise DeadlineImpossible(
            f"{questions} question(s) take about {alone * 1000:.0f} ms on this server even with no "
            f"queue ({rate:.1f} questions/s lately), longer than the deadline of "
            f"{deadline_s * 1000:.0f} ms; allow more time or send fewer questions",
            None,
            field="deadline_ms",
        )
    eta = busy_s + (queued + questions) / rate
    if eta > ADMIT_WITHIN * deadline_s:
        raise Overloaded(
            f"the server is busy: the {queued} questions ahead and this request's {questions} would be "
            f"answered in about {eta:.1f} s at {rate:.1f} questions/s, too close to the deadline of "
            f"{deadline_s:.1f} s",
            eta - ADMIT_WITHIN * deadline_s,
            field="queue",
        )


@dataclass
class RetrySlots:
    """When to tell each refused caller to come back. A ``Retry-After`` of "when the queue ahead has
    room" is the same second for every caller refused in the same second, and a hundred callers
    honouring it come back together, to be refused together again: the server spends its cores
    refusing. Spacing them one after another at the server's pace is no better: a caller arriving
    each time one question's worth of compute has passed finds the worker busy, waits alone, and
    the next batch holds the one or two that came meanwhile. Batches shrink, and with them the
    rate (at 120-256 callers of ~1 s questions: 0.75-0.69x the goodput of 16 callers).

    So the refused are sent back in groups, each a batch's worth of questions (``batch_target``):
    a group is told to come back when the queue will have room for all of it, and the next group a
    group's compute time later (at ``RateMeter.mean_rate``, the pace the server keeps). Each group
    arrives while the batch before it runs and is the next batch, whole."""

    _group_at: float = 0.0  # time.monotonic() the open group comes back
    _group_room: int = 0  # questions the open group still takes

    def after(self, earliest_s: float, questions: int, rate: float | None, now: float, group: int = 1) -> int:
        """Seconds (``Retry-After``) for a caller refused now, whom the queue could take in
        ``earliest_s`` at the soonest.

        Args:
            earliest_s: When the queue will have room for the caller's own questions.
            questions: The caller's questions.
            rate: The server's pace, questions per second (None: not measured; the queue's own time).
            now: ``time.monotonic()``.
            group: Questions per group (``batch_target``): the batch the returning callers form.
        """
        if rate is None:
            return _seconds(earliest_s)
        group = max(group, questions)
        if self._group_room < questions or self._group_at < now:
            # A new group: after the open one has had its batch, and not before the queue has room
            # for all of it.
            self._group_at = max(self._group_at + group / rate, now + earliest_s + (group - questions) / rate)
            self._group_room = group
        self._group_room -= questions
        return _seconds(self._group_at - now)


def batch_target(rate: float | None, deadline_s: float, max_batch: int) -> int:
    """The batch the server aims to keep waiting behind the running one: half of what the deadline
    admits (``ADMIT_WITHIN`` of it at ``rate``), so a running batch and a waiting one both fit; at
    most ``max_batch``, at least 1."""
    if rate is None:
        return max_batch
    return max(1, min(max_batch, int(rate * ADMIT_WITHIN * deadline_s / 2)))


def batch_room(rate: float | None, deadline_left_s: float, max_batch: int) -> int:
    """The most questions a batch may hold and still end within ``deadline_left_s`` (the earliest
    deadline among its requests) at ``rate``: at least 1, at most ``max_batch``."""
    if rate is None:
        return max_batch
    return max(1, min(max_batch, int(deadline_left_s * rate)))


def _seconds(wait_s: float) -> int:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return max(1, math.ceil(wait_s))
