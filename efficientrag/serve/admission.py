"""Admission by deadline: what a batch costs this server, and what the queue ahead of a request
costs it.

A queue sized by hand admits what it cannot serve: under 120 callers with 30 s timeouts it queues
requests that wait past their callers' patience, and computes answers nobody reads. Here a request
carries a deadline (only a Search-R1 batch that names none has none, and is admitted under the
queue's cap alone), and before it is queued the server asks whether the running batch, the
questions ahead of it and its own can be answered in time. If not, it is
refused at once with 503 and a ``Retry-After`` saying when to come back (``RetrySlots``); if no
queue could ever make it (its own questions alone take longer than its deadline), it is refused
naming ``deadline_ms``.

What the server plans with is a batch's cost, not a rate: a batch of n questions takes about
``fixed_s + per_question_s * n`` seconds (``BatchCost``), fitted over the last few batches of the
worker's own compute time (``RateMeter``). The fixed part is real: with the honest protocol's models
one question alone took 1.6-4.3 s and a batch of eight 8-10 s. A single rate would have to choose:
the slowest recent batch's questions per second is a batch of one's, and planning with it admits a
queue of a few questions, whose small batches then run at that same low rate (at 256 callers: 2.5
questions a batch, 0.73x the goodput of 16 callers). A line fitted on a few noisy small batches
can come out nearly flat; a question is never planned at less than half the window's mean seconds a
question (``MIN_SLOPE_SHARE``), so a large batch is never planned as nearly free.

Admission plans the running batch, the queue ahead and the request within ``ADMIT_WITHIN`` of the
deadline: that admits a running batch and a whole one waiting behind it, and leaves a margin for a
batch slower than the fit (a request admitted on a cost that then rises runs late, is computed all
the same, and gets 504). Refused callers are sent back in groups of a batch's worth
(``RetrySlots``, ``batch_target``), each arriving while the batch before it runs, so the worker
never runs dry and its batches stay full. A batch is cut where it would no longer finish before
the earliest deadline among its requests (``batch_room``), so a request admitted on time is not
made late by those that join its batch after it.

An idle server (nothing running, nothing queued) admits whatever arrives: its batch measures the
cost afresh, and no estimate made under other load (a warm-up while the machine was busy) can
refuse every request while nothing runs to correct it. Each fit weighs a batch by how recent it
is (``RATE_HALF_LIFE``), so the estimate follows fresh measurements within a few batches.
A request that names no deadline has its own admission under overload
(``admit_within_target``, :mod:`efficientrag.serve.controlled_delay`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from efficientrag.errors import EfficientRAGError

# Batches the cost is fitted on: few enough to follow a change of load (a different mix of
# settings, another process taking the cores) within a few batches.
RATE_WINDOW = 8
# A batch's weight in the fit halves with every this-many batches measured after it: a warm-up run
# while the machine was busy, or a load that went away, stops planning within a few batches.
RATE_HALF_LIFE = 2.0
# Admission plans to answer the running batch, the queue ahead and the request within this fraction
# of its deadline. What that admits is two batches of ``batch_target`` questions: the one running
# and the one waiting behind it, whose first request, when its batch starts, has the time of one
# batch left and more, so the cut to the earliest deadline (``batch_room``) keeps it whole. The rest
# is the margin for a batch slower than the fit.
ADMIT_WITHIN = 0.65
# A batch is filled to end within this fraction of the time its most pressed request has left: a
# batch filled to the last second turns any batch slower than the fit into 504s (at 64 clients on
# the honest protocol's models: 8 of 95 answers; filled to 80%: 1 of 121).
BATCH_WITHIN = 0.7
# The fitted seconds a question adds are at least this share of the window's mean seconds a question.
MIN_SLOPE_SHARE = 0.5


class Refused(EfficientRAGError):
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


class Shed(Refused):
    """A request that names no deadline, refused (or sent back from the queue) under overload: the
    queue's standing delay is above its target (:mod:`efficientrag.serve.controlled_delay`)."""


@dataclass(frozen=True)
class BatchCost:
    """Seconds a batch of ``n`` questions takes: ``fixed_s + per_question_s * n``. ``batch``: the
    largest batch (``max_batch``); more questions are planned as several batches of that size."""

    fixed_s: float
    per_question_s: float
    batch: int

    def seconds(self, questions: int) -> float:
        """Seconds ``questions`` take, run in batches of at most ``batch``."""
        if questions <= 0:
            return 0.0
        return math.ceil(questions / self.batch) * self.fixed_s + questions * self.per_question_s

    def most_within(self, seconds: float) -> int:
        """The largest batch (at most ``batch``) that ends within ``seconds``; 0 if none does."""
        if seconds <= self.fixed_s:
            return 0
        if math.isinf(seconds):  # a request with no deadline
            return self.batch
        return min(self.batch, int((seconds - self.fixed_s) / self.per_question_s))


@dataclass
class RateMeter:
    """The last ``window`` batches (questions, seconds of compute: the time a batch took in the
    worker, not the time the worker waited for requests), and the ``BatchCost`` fitted on them."""

    window: int = RATE_WINDOW

    def __post_init__(self) -> None:
        self._batches: deque[tuple[int, float]] = deque(maxlen=self.window)

    def record(self, questions: int, seconds: float) -> None:
        if questions > 0 and seconds > 0:
            self._batches.append((questions, seconds))

    @property
    def rate(self) -> float | None:
        """Questions per second over the window's batches taken together (``efficientrag_rate``),
        or None before the first batch."""
        if not self._batches:
            return None
        return sum(q for q, _ in self._batches) / sum(s for _, s in self._batches)

    def cost(self, max_batch: int) -> BatchCost | None:
        """The least-squares line of seconds on batch size over the window, each batch weighted by
        its recency (``RATE_HALF_LIFE``), or None before the first batch (nothing is refused by
        deadline then: the queue's hard cap still holds). Where the window's sizes are all alike,
        or the line is not a cost (a negative slope or fixed part, as noise can draw), every second
        is put on the questions: ``fixed_s`` 0."""
        if not self._batches:
            return None
        n = len(self._batches)
        # (weight, questions, seconds), the newest batch weighing 1.
        rows = [(0.5 ** ((n - 1 - i) / RATE_HALF_LIFE), q, s) for i, (q, s) in enumerate(self._batches)]
        total_w = sum(w for w, _, _ in rows)
        per_question = sum(w * s for w, _, s in rows) / sum(w * q for w, q, _ in rows)
        proportional = BatchCost(0.0, per_question, max_batch)
        if len({q for _, q, _ in rows}) < 2:
            return proportional
        mean_q = sum(w * q for w, q, _ in rows) / total_w
        mean_s = sum(w * s for w, _, s in rows) / total_w
        spread = sum(w * (q - mean_q) ** 2 for w, q, _ in rows)
        slope = sum(w * (q - mean_q) * (s - mean_s) for w, q, s in rows) / spread
        if slope <= 0:
            return proportional
        # A slope drawn flat by a few noisy small batches would plan a large batch as nearly free:
        # a question costs at least MIN_SLOPE_SHARE of the window's mean seconds a question.
        slope = max(slope, MIN_SLOPE_SHARE * per_question)
        fixed = mean_s - slope * mean_q
        return proportional if fixed < 0 else BatchCost(fixed, slope, max_batch)


def running_left(cost: BatchCost, size: int, elapsed_s: float) -> float:
    """Seconds the running batch of ``size`` questions still needs (0 once it has run longer than
    its cost: it is about to end, or slower than measured, and no guess is better)."""
    return max(0.0, cost.seconds(size) - elapsed_s)


def admit(
    *,
    questions: int,
    queued: int,
    max_queue: int,
    deadline_s: float,
    cost: BatchCost | None,
    busy_s: float,
    window_s: float,
    running: bool,
) -> None:
    """Raise ``Refused`` unless ``questions`` more can be queued and answered within ``deadline_s``.
    An idle server (nothing ``running``, nothing ``queued``) admits any request its queue can hold:
    only a batch can tell what a batch costs now.

    Args:
        questions: The request's questions.
        queued: Questions already waiting for a batch.
        max_queue: The queue's hard cap.
        deadline_s: Seconds the request may take from now.
        cost: The measured batch cost (None: not measured yet; only the cap applies).
        busy_s: Seconds the running batch still needs (``running_left``; 0 when idle).
        window_s: The batching window (``max_wait_ms``): the least a request waits for others.
        running: Whether a batch is running now.
    """
    if queued + questions > max_queue:
        over = queued + questions - max_queue
        raise QueueFull(
            f"the server is busy: {queued} questions are waiting (at most {max_queue})",
            1.0 if cost is None else over * cost.per_question_s + cost.fixed_s,
            field="queue",
        )
    if not running and queued == 0:
        # Idle: no estimate refuses (only a batch can tell what a batch costs now); a deadline
        # inside the batching window is the one no server of these settings can meet.
        if deadline_s < window_s:
            raise DeadlineImpossible(
                f"a deadline of {deadline_s * 1000:.1f} ms is shorter than this server's batching "
                f"window ({window_s * 1000:.0f} ms); allow more time",
                None,
                field="deadline_ms",
            )
        return
    if cost is None:
        return
    alone = window_s + cost.seconds(questions)
    if alone > deadline_s:
        raise DeadlineImpossible(
            f"{questions} question(s) take about {alone * 1000:.0f} ms on this server even with no "
            f"queue (a batch costs {cost.fixed_s:.2f} s + {cost.per_question_s:.2f} s a question "
            f"lately), longer than the deadline of {deadline_s * 1000:.0f} ms; allow more time or "
            "send fewer questions",
            None,
            field="deadline_ms",
        )
    eta = busy_s + window_s + cost.seconds(queued + questions)
    if eta > ADMIT_WITHIN * deadline_s:
        raise Overloaded(
            f"the server is busy: {_ahead(running, queued)} and this request's {questions} would be "
            f"answered in about {eta:.1f} s, too close to the deadline of {deadline_s:.1f} s",
            eta - ADMIT_WITHIN * deadline_s,
            field="queue",
        )


def admit_within_target(
    *,
    questions: int,
    ahead: int,
    cost: BatchCost | None,
    busy_s: float,
    window_s: float,
    target_s: float,
    running: bool,
) -> None:
    """Under overload, admit a request that names no deadline only if it can be answered within
    the queue's target sojourn: the running batch, the questions served before it and its own.
    Raises ``Shed`` otherwise (its ``wait_s`` when that much work will have drained).

    Args:
        questions: The request's questions.
        ahead: Questions waiting that are not bulk: those with a deadline go first under overload,
            and the older ones without are counted too, so that admitting this request does not
            push them past the target.
        cost: The measured batch cost (None: not measured; admitted).
        busy_s: Seconds the running batch still needs.
        window_s: The batching window.
        target_s: The queue's target sojourn (``serve.queue_target_s``).
        running: Whether a batch is running now.
    """
    if cost is None or (not running and ahead == 0):
        return
    eta = busy_s + window_s + cost.seconds(ahead + questions)
    if eta > target_s:
        raise Shed(
            f"the server is overloaded: requests have waited over {target_s:.1f} s for a while; with "
            f"{_ahead(running, ahead)}, this request's {questions} would take about {eta:.1f} s",
            eta - target_s,
            field="queue",
        )


def _ahead(running: bool, queued: int) -> str:
    """What stands before a request, naming a running batch only when one runs."""
    parts = (["the running batch"] if running else []) + ([f"the {queued} questions ahead"] if queued else [])
    return " and ".join(parts) if parts else "nothing ahead"


@dataclass
class RetrySlots:
    """When to tell each refused caller to come back. A ``Retry-After`` of "when the queue ahead has
    room" is the same second for every caller refused in the same second, and a hundred callers
    honouring it come back together, to be refused together again: the server spends its cores
    refusing. Spacing them one after another at the server's pace is no better: a caller arriving
    each time one question's worth of compute has passed finds the worker busy, waits alone, and
    the next batch holds the one or two that came meanwhile. Batches shrink, and with them the
    goodput (at 120-256 callers of ~1 s questions: 0.75-0.69x the goodput of 16 callers).

    So the refused are sent back in groups, each a batch's worth of questions (``batch_target``):
    a group is told to come back when the queue will have room for all of it, and the next group
    when that group's batch has run (``BatchCost``). Each group arrives while the batch before it
    runs and is the next batch, whole. No group is placed beyond the work the server has admitted
    and one batch more (``admitted_s``): the chain follows what the server holds, not every
    promise it ever made."""

    _group_at: float = float("-inf")  # time.monotonic() the open group comes back (none yet)
    _group_room: int = 0  # questions the open group still takes

    def after(
        self,
        earliest_s: float,
        questions: int,
        cost: BatchCost | None,
        now: float,
        group: int = 1,
        admitted_s: float = math.inf,
    ) -> int:
        """Seconds (``Retry-After``) for a caller refused now, whom the queue could take in
        ``earliest_s`` at the soonest.

        Args:
            earliest_s: When the queue will have room for the caller's own questions.
            questions: The caller's questions.
            cost: The server's batch cost (None: not measured; the queue's own time).
            now: ``time.monotonic()``.
            group: Questions per group (``batch_target``): the batch the returning callers form.
            admitted_s: Seconds the server needs for the work it has admitted (the running batch
                and the queue). No group is placed later than that and one group's batch: a
                promise to callers who never came back (they gave up, or were served elsewhere)
                must not push the next caller further out, and an idle server never sends anyone
                away for longer than about one batch.
        """
        if cost is None:
            return _seconds(earliest_s)
        group = max(group, questions)
        latest = now + max(earliest_s, admitted_s) + cost.seconds(group)
        if self._group_room < questions or self._group_at < now:
            # A new group: once the open one's batch has run, and not before the queue has room
            # for all of it.
            room_for_all = now + earliest_s + (group - questions) * cost.per_question_s
            self._group_at = min(max(self._group_at + cost.seconds(group), room_for_all), latest)
            self._group_room = group
        self._group_room -= questions
        return _seconds(min(self._group_at, latest) - now)


def batch_target(cost: BatchCost | None, deadline_s: float, max_batch: int) -> int:
    """The batch the server aims to keep waiting behind the running one: the largest whose cost,
    twice over (the running batch and its own), fits ``ADMIT_WITHIN`` of the deadline; at most
    ``max_batch``, at least 1."""
    if cost is None:
        return max_batch
    return max(1, min(max_batch, cost.most_within(ADMIT_WITHIN * deadline_s / 2)))


def batch_room(cost: BatchCost | None, deadline_left_s: float, max_batch: int) -> int:
    """The most questions a batch may hold and still end within ``BATCH_WITHIN`` of
    ``deadline_left_s`` (the earliest deadline among its requests): at least 1, at most
    ``max_batch``."""
    if cost is None:
        return max_batch
    return max(1, min(max_batch, cost.most_within(BATCH_WITHIN * deadline_left_s)))


def _seconds(wait_s: float) -> int:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return max(1, math.ceil(wait_s))
