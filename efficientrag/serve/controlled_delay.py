"""Controlled delay: telling overload from a burst by how long the queue keeps its callers waiting.

A request that names no deadline (an RL trainer's one-query ``/retrieve``: verl's SearchTool sends
none, and gives up after its own 30 s) cannot be admitted by deadline, and a first-in, first-out
queue then serves each such caller when it has waited nearly its whole timeout. Facebook's
"Fail at Scale" (ACM Queue, 2015) answers it without knowing the timeout: watch the queue's
sojourn time, as CoDel does, and under a standing queue

- cap what a waiting caller may cost in time at a short ``target`` (a request the queue cannot
  answer within it is refused at once, one that has waited longer is sent back: 503 + Retry-After);
- serve the newest waiting caller first (adaptive LIFO): the one most likely to still be there.

A burst is not overload: the queue that builds while a burst is served drains within an
``interval``. So the server is *overloaded* once the oldest waiting request's sojourn has stood
above ``target`` for a whole ``interval``, and stays so until an ``interval`` passes in which it
refused or sent back no one and no caller it refused was due back: the demand then fits again, and
the queue goes back to first in, first out. (Refused callers waiting out their ``Retry-After`` are
demand the queue does not show: ending the overload while they wait would admit them all first
in, first out when they return, and the queue would stand again.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ControlledDelay:
    """The overload state of one queue.

    Args:
        target_s: The sojourn a waiting caller may have; above it for ``interval_s``, the queue
            stands.
        interval_s: How long the sojourn must stand above ``target_s`` to be overload (not a burst),
            and how long without a refusal ends it.
    """

    target_s: float
    interval_s: float
    _above_since: float | None = None  # when the oldest waiting request's sojourn crossed target_s
    _overloaded_since: float | None = None
    _last_refusal: float = float("-inf")

    def observe(self, oldest_sojourn_s: float | None, now: float) -> None:
        """Record the sojourn of the oldest request waiting now (None: nothing waits).

        Args:
            oldest_sojourn_s: Seconds the oldest waiting request has waited.
            now: ``time.monotonic()``.
        """
        if self._overloaded_since is not None:
            quiet_since = max(self._overloaded_since, self._last_refusal)
            if now - quiet_since >= self.interval_s:  # an interval with no one refused: it fits again
                self._overloaded_since = None
                self._above_since = None
        if oldest_sojourn_s is None or oldest_sojourn_s < self.target_s:
            self._above_since = None
        elif self._above_since is None:
            self._above_since = now - (oldest_sojourn_s - self.target_s)
        if (
            self._overloaded_since is None
            and self._above_since is not None
            and now - self._above_since >= self.interval_s
        ):
            self._overloaded_since = now

    def refused(self, now: float, retry_after_s: float = 0.0) -> None:
        """A caller was refused or sent back because of the overload, told to come back in
        ``retry_after_s``: the overload goes on at least until then (callers waiting out their
        Retry-After are demand the queue does not show)."""
        self._last_refusal = max(self._last_refusal, now + retry_after_s)

    def overloaded(self) -> bool:
        """Whether the queue stands (as of the last :meth:`observe`)."""
        return self._overloaded_since is not None
