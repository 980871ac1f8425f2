"""Ctrl-C and SIGTERM during a long run: finish what is in flight, keep it, and say how to resume.

The first signal only asks the run to stop: the batch being computed is finished and written, so a
Ctrl-C never throws away questions that were nearly done. A second signal stops at once
(:class:`RunInterrupted` is raised wherever the main thread is); what earlier batches wrote is
kept either way. The exit status follows the shell's convention, 128 + the signal number
(130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(BaseException):
    """The run stopped on a signal. ``done`` / ``to_go`` count questions, when the runner knows them.

    A ``BaseException``, as ``KeyboardInterrupt`` is: the second signal raises it wherever the main
    thread is, nearly always inside a method's own code, and an ``except Exception`` there or in the
    runner (which retries a failed batch one question at a time) would turn "stop at once" into a
    recorded failure or a slower run of the rest of the batch.
    """

    def __init__(self, signum: int, *, done: int | None = None, to_go: int | None = None) -> None:
        self.signum = signum
        self.done = done
        self.to_go = to_go
        super().__init__(self.message())

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def message(self) -> str:
        name = signal.Signals(self.signum).name
        if self.done is None or self.to_go is None:
            return f"interrupted ({name}); rerun the same command to resume"
        return f"interrupted ({name}): {self.done} done, {self.to_go} to go; rerun the same command to resume"


class StopRequests:
    """Installs the handlers for the duration of a ``with`` block (main thread only: elsewhere
    Python cannot install handlers, and the block runs without them)."""

    def __init__(self, label: str = "run") -> None:
        self.label = label
        self.requested: int | None = None
        # Set once the run is writing what it has: further signals are acknowledged, not raised.
        self.finishing = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for signum in HANDLED_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested is None:
            self.requested = signum
            print(
                f"\n{self.label}: {signal.Signals(signum).name} received: finishing the questions in "
                "flight, then stopping (send it again to stop at once)",
                file=sys.stderr,
                flush=True,
            )
            return
        if self.finishing:
            print(f"{self.label}: already stopping: writing what is done", file=sys.stderr, flush=True)
            return
        raise RunInterrupted(signum)


def ignore_further_stop_signals() -> None:
    """For a command that is exiting after an interrupt: later SIGINT/SIGTERM are ignored, so the
    exit status stays the one that reports the interrupt (a program's choice, not a library's)."""
    if threading.current_thread() is threading.main_thread():
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def report_interrupt(exc: RunInterrupted) -> int:
    """Say how an interrupted command resumes, in one line on stderr, and return its exit status.

    Args:
        exc: the interrupt that ended the run.

    Returns:
        128 + the signal number (130 for SIGINT, 143 for SIGTERM).
    """
    ignore_further_stop_signals()  # the process is on its way out: a repeated Ctrl-C changes nothing
    print(exc.message(), file=sys.stderr)
    return exc.exit_code


def main_reporting_interrupts(main: Callable[[], int | None]) -> int | None:
    """Run a script's ``main`` so that an interrupt ends it with the resume line, not a traceback.

    Long benchmark scripts evaluate many runs; a Ctrl-C in one of them is an ordinary way to stop,
    and the user needs to read that rerunning resumes, not ten frames of the runner's internals.

    Args:
        main: the script's entry, returning its exit status.

    Returns:
        ``main``'s status, or the interrupt's (see :func:`report_interrupt`).
    """
    try:
        return main()
    except RunInterrupted as exc:
        return report_interrupt(exc)
