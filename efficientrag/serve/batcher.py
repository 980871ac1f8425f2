"""Micro-batching: concurrent requests gathered into one ``retrieve_batch`` call.

The loop is far cheaper per question in a batch (every model call and search is batched across
questions), so a request waits at most ``max_wait_ms`` for others to join it, and a batch takes
at most ``max_batch`` questions. Only requests with the same loop settings share a batch (the
settings key); a request is never split. While a batch runs, new requests queue and form the next
batch as soon as it ends. One worker thread runs the batches, one at a time: the models and the
index are not shared between threads, and the event loop stays free to accept and refuse.

The queue is bounded (``max_queue`` questions waiting): past it ``submit`` raises ``QueueFull``
at once. A request whose deadline passes is dropped from the queue (or, if its batch already runs,
its result is discarded) and gets ``DeadlineExceeded``. The results of a batch are the library's
own, so a reply equals a one-at-a-time call's: the same chunks, order, hops and tags, and the same
probabilities and scores up to float32 noise (another batch shape adds its sums in another order).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from efficientrag.serve.metrics import Metrics

log = logging.getLogger(__name__)

RunBatch = Callable[[Hashable, list[str]], list[Any]]


class QueueFull(Exception):
    """No room for the request's questions in the queue."""


class DeadlineExceeded(Exception):
    """The request's deadline passed; ``running`` says whether its batch had started."""

    def __init__(self, seconds: float, running: bool) -> None:
        self.seconds = seconds
        self.running = running
        where = "while its batch ran" if running else "before a batch took it"
        super().__init__(f"no answer within {seconds * 1000:.0f} ms (the deadline passed {where})")


@dataclass
class _Job:
    key: Hashable
    questions: list[str]
    future: asyncio.Future
    arrived: float
    started: bool = False
    dropped: bool = False


@dataclass
class MicroBatcher:
    """``run(key, questions)`` is called in the worker thread with one batch of same-key questions."""

    run: RunBatch
    max_batch: int
    max_wait_s: float
    max_queue: int
    metrics: Metrics
    _pending: deque[_Job] = field(default_factory=deque)
    _queued: int = 0

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

    async def submit(self, key: Hashable, questions: list[str], deadline_s: float) -> list[Any]:
        """The questions' results, in order, from the batch they joined."""
        if self._queued + len(questions) > self.max_queue:
            raise QueueFull(f"{self._queued} questions are waiting (at most {self.max_queue})")
        loop = asyncio.get_running_loop()
        job = _Job(key, list(questions), loop.create_future(), loop.time())
        self._pending.append(job)
        self._set_queued(self._queued + len(questions))
        self._wakeup.set()
        try:
            return await asyncio.wait_for(asyncio.shield(job.future), deadline_s)
        except asyncio.TimeoutError:
            self._drop(job)
            raise DeadlineExceeded(deadline_s, job.started) from None
        except asyncio.CancelledError:
            self._drop(job)  # the client went away
            raise

    def _drop(self, job: _Job) -> None:
        job.dropped = True
        if not job.started and job in self._pending:
            self._pending.remove(job)
            self._set_queued(self._queued - len(job.questions))

    def _set_queued(self, n: int) -> None:
        self._queued = n
        self.metrics.queue_depth.set(n)

    async def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
            first = self._pending[0]
            # Wait for others to join, up to max_wait after the first arrived, or until full.
            while self._same_key(first.key) < self.max_batch:
                left = first.arrived + self.max_wait_s - loop.time()
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
        """The oldest same-key jobs that fit in one batch (the first always does)."""
        taken: list[_Job] = []
        size = 0
        for job in list(self._pending):
            if job.key != key:
                continue
            if taken and size + len(job.questions) > self.max_batch:
                break
            taken.append(job)
            size += len(job.questions)
            self._pending.remove(job)
        for job in taken:
            job.started = True
        self._set_queued(self._queued - size)
        return taken

    async def _run(self, batch: list[_Job]) -> None:
        questions = [q for job in batch for q in job.questions]
        self.metrics.batch_size.observe(len(questions))
        self.metrics.in_flight.set(len(questions))
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self._executor, self.run, batch[0].key, questions)
        except Exception as exc:
            for job in batch:
                if not job.future.done() and not job.dropped:  # nobody waits on a dropped job
                    job.future.set_exception(exc)
            return
        finally:
            self.metrics.in_flight.set(0)
        self.metrics.questions.inc(len(questions))
        at = 0
        for job in batch:
            part = results[at : at + len(job.questions)]
            at += len(job.questions)
            if not job.future.done() and not job.dropped:
                job.future.set_result(part)
