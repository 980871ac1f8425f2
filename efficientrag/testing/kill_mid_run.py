"""Start a command in its own process group and SIGKILL the whole group once it has made progress:
the crash a resume must survive (no handler runs, no file is closed cleanly)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def kill_when(
    cmd: Sequence[str], cwd: str | Path, progress: Callable[[], int], at: int, timeout: float
) -> tuple[int | None, str]:
    """Run ``cmd`` (one thread, as a launched CPU run) until ``progress()`` reaches ``at``, then kill
    -9 it; returns (the progress read right after the kill, or None if it never got there, output)."""
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    killed_at = None
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if progress() >= at:
                os.killpg(proc.pid, signal.SIGKILL)
                killed_at = progress()
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        output = proc.communicate()[0].decode(errors="replace")
    return killed_at, output
