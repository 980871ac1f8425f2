"""CPU threads for a training process.

``accelerate launch`` exports ``OMP_NUM_THREADS=1`` to its workers unless it is given
``--num_cpu_threads_per_process`` (and with ``--cpu`` it counts *physical* cores, one on many
cloud VMs), so the documented ``accelerate launch train/labeler.py ...`` would train on one core of
a CPU machine. The entry script therefore sets PyTorch's thread count itself when no accelerator
is present: all the cores this process may run on, shared among the local processes, or the
config's ``cpu_threads`` when set.
"""

from __future__ import annotations

import logging
import os

import torch

from efficientrag.cpu import available_cores
from efficientrag.errors import InvalidArgumentError

logger = logging.getLogger(__name__)


def has_accelerator() -> bool:
    mps = getattr(torch.backends, "mps", None)
    xpu = getattr(torch, "xpu", None)
    return bool(
        torch.cuda.is_available()
        or (mps is not None and mps.is_available())
        or (xpu is not None and xpu.is_available())
    )


def configure_cpu_threads(requested: int = 0) -> int | None:
    """Set torch's intra-op threads for CPU training; returns the count, or None on an accelerator.

    ``requested`` > 0 is used as given; 0 means the available cores divided by the processes
    launched on this machine (``LOCAL_WORLD_SIZE``, set by accelerate/torchrun; 1 otherwise).
    """
    if requested < 0:
        raise InvalidArgumentError(f"cpu_threads must be >= 0, got {requested}")
    if has_accelerator():
        return None
    local = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
    threads = requested or max(1, available_cores() // local)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    if threads != before:
        logger.info(
            "training on CPU with %d threads (was %d; OMP_NUM_THREADS=%s)",
            threads,
            before,
            os.environ.get("OMP_NUM_THREADS", "unset"),
        )
    return threads
