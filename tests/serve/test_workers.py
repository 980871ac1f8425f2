"""``serve.workers``: several processes on one port, each with its own loop; every request is
answered, and SIGTERM drains them all and exits 0 (issue 50, "Use the machine")."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tests.serve.serve_harness import Server, build_tiny_models, wait_until, write_corpus  # noqa: E402

WORKERS = 2


def workers_of(pid: int) -> list[int]:
    """The worker processes of a server (multiprocessing's resource tracker is a child too)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return [c for c in found if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads worker processes from /proc (Linux)")
def test_workers_share_the_port_answer_every_request_and_drain_on_sigterm(tmp_path):
    models = build_tiny_models(tmp_path / "models")
    control = tmp_path / "control"
    control.mkdir()
    argv = [sys.executable, str(Path(__file__).with_name("serve_harness.py")),
            "--corpus", str(write_corpus(tmp_path / "corpus.jsonl")), "--labeler", models["labeler"],
            "--filter", models["filter"], "--control", str(control), f"workers={WORKERS}", "threads=1",
            "access_log=false"]  # fmt: skip
    server = Server(argv, tmp_path / "server.log")
    try:
        wait_until(
            lambda: server.text().count("Application startup complete") == WORKERS, "every worker", 180
        )
        workers = workers_of(server.proc.pid)
        assert len(workers) == WORKERS and f"{WORKERS} workers, 1 torch threads each" in server.text()
        replies: list = [None] * 12

        def ask(i: int) -> None:
            with httpx.Client(base_url=server.url, timeout=120) as client:  # a connection of its own
                replies[i] = client.post("/v1/retrieve", json={"question": f"Who directed Film {i}?"})

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(replies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert [r.status_code for r in replies] == [200] * len(replies)
        server.terminate()
        assert server.wait(timeout=120) == 0
        assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        server.kill()
