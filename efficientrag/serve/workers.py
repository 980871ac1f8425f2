"""``serve.workers``: several server processes sharing one port, each with its own loaded loop.

One process runs one batch at a time in one worker thread (the models and the index are not shared
between threads: a fast tokenizer refuses to be borrowed twice at once), and a batch's torch work
does not keep every core busy: tokenizing, searching and the Python between the model calls are
one core's work. More processes, each with fewer torch threads, keep more of a machine busy.

The parent binds the socket, starts ``workers`` processes (``spawn``: no torch or OpenMP state is
inherited half-initialized through a fork) and hands each the listening socket; each opens the
loop itself (``open_app``), sets its torch threads, and serves through the same runner as a single
process, so each drains on SIGTERM. The kernel hands every new connection to one of the processes
waiting on the shared socket. The parent forwards SIGTERM/SIGINT, waits for all, and exits 0 when
they all did; if one exits with an error, it stops the others.

Each process keeps its own queue, rate and metrics: ``/metrics`` answers for whichever process
took the connection (docs/serve.md says how to scrape them). Memory is ``workers`` times the
loop's.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
from collections.abc import Callable
from typing import Any

from efficientrag.cpu import available_cores
from efficientrag.serve.config import ServeConfig
from efficientrag.serve.runner import bind, listening, run_server

log = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def threads_per_worker(cfg: ServeConfig) -> int:
    """``serve.threads``, or the process's cores shared out among the workers (at least 1)."""
    return cfg.threads or max(1, available_cores() // cfg.workers)


def set_torch_threads(n: int) -> None:
    """Torch's intra-op threads for this process (before the models run)."""
    import torch

    torch.set_num_threads(n)


def run_workers(open_app: Callable[[], Any], cfg: ServeConfig) -> int:
    """Serve ``open_app()`` in ``cfg.workers`` processes on one socket until SIGTERM/SIGINT.

    Args:
        open_app: Opens the loop and returns the ASGI app; called in each worker (picklable: a
            module-level function or a ``functools.partial`` of one).
        cfg: The service settings.

    Returns:
        0 when every worker stopped after draining; 1 when one failed (the others are stopped).
    """
    sock = bind(cfg.host, cfg.port)
    listening(sock, cfg, cfg.workers)
    spawn = multiprocessing.get_context("spawn")
    level = logging.getLogger().getEffectiveLevel()
    threads = threads_per_worker(cfg)
    procs = [
        spawn.Process(
            target=_worker, args=(open_app, cfg, sock, threads, level), name=f"efficientrag-worker-{i}"
        )
        for i in range(cfg.workers)
    ]
    stopping: list[int] = []

    def forward(sig: int, _frame: Any) -> None:
        stopping.append(sig)
        for p in procs:
            if p.is_alive():
                p.terminate()  # SIGTERM: the worker drains, then exits 0

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for p in procs:
            p.start()
        log.info("%d workers, %d torch threads each", cfg.workers, threads)
        failed = _wait(procs, stopping, forward)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    return 1 if failed else 0


def _wait(procs: list[Any], stopping: list[int], stop: Callable[[int, Any], None]) -> bool:
    """Join the workers; the first to fail stops the rest. True when any failed."""
    failed = False
    while any(p.is_alive() for p in procs):
        for p in procs:
            p.join(timeout=0.5)
            if p.exitcode not in (None, 0) and not failed:
                failed = True
                log.error("worker %s exited with %s; stopping the others", p.name, p.exitcode)
                if not stopping:
                    stop(signal.SIGTERM, None)
    return failed or any(p.exitcode != 0 for p in procs)


def _worker(
    open_app: Callable[[], Any], cfg: ServeConfig, sock: socket.socket, threads: int, level: int
) -> None:
    """One worker process: its own logging, torch threads and loop, served on the shared socket."""
    import sys

    logging.basicConfig(level=level, format=LOG_FORMAT, datefmt="%H:%M:%S")
    set_torch_threads(threads)
    sys.exit(run_server(open_app(), cfg, sock=sock))
