"""The CPU cores this process may use, for every part that sizes a thread pool (training, ONNX Runtime).

``os.cpu_count()`` counts the machine; containers and ``taskset`` narrow a process to fewer cores
through its affinity mask, and a pool sized to the machine would oversubscribe them.
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on (the affinity mask, which containers and taskset narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
