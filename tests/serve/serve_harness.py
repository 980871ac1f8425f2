"""Helpers for the serve tests: tiny models, a small corpus, a server in a subprocess, and a test
backend that a test can hold (to keep requests in flight) or break (to be "down").

Run as a script it is that server: ``create_app`` over a ``GatedRetriever`` (a word-overlap search
whose control folder says hold or fail), served by the same runner as ``efficientrag serve``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
HOLD, FAIL, SLOW, SEARCHED = "hold", "fail", "slow", "searched"
BACKEND = "word-overlap (test)"
START_TIMEOUT_S = 180  # a cold start imports torch and transformers on a shared 2-core machine


def corpus_rows(n: int = 40) -> list[dict[str, str]]:
    """Bridge facts: films with directors, directors with birthplaces, and some distractors."""
    rows = []
    for i in range(n // 2):
        rows.append({"id": f"film{i}", "title": f"Film {i}", "text": f"Film {i} was directed by Person {i}."})
        rows.append(
            {"id": f"person{i}", "title": f"Person {i}", "text": f"Person {i} was born in City {i % 5}."}
        )
    return rows


def write_corpus(path: Path, rows: Sequence[dict[str, str]] | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows or corpus_rows()), encoding="utf-8")
    return path


def build_tiny_models(root: Path) -> dict[str, str]:
    """Random tiny ModernBERT Labeler and Filter (64 tokens, so a long question is over the limit)."""
    from efficientrag.models import Filter, Labeler
    from efficientrag.testing.tiny_backbones import tiny_modernbert
    from efficientrag.testing.token_tasks import sentences

    backbone = str(tiny_modernbert(root / "mb", sentences(200)))
    return {
        "labeler": str(
            Labeler.from_backbone(backbone, max_length=64, device="cpu").save_pretrained(root / "labeler")
        ),
        "filter": str(
            Filter.from_backbone(backbone, max_length=64, device="cpu").save_pretrained(root / "filter")
        ),
    }


def harness_argv(root: Path, *options: str) -> tuple[list[str], Path]:
    """The command of a harness server over tiny models and the harness corpus, all made under
    ``root``, with ``options`` (its flags and ``key=value`` serve settings) after them; and its
    control folder (``HOLD``, ``FAIL``, ``searched``)."""
    models = build_tiny_models(root / "models")
    control = root / "control"
    control.mkdir()
    argv = [sys.executable, str(Path(__file__)), "--corpus", str(write_corpus(root / "corpus.jsonl")),
            "--labeler", models["labeler"], "--filter", models["filter"], "--control", str(control),
            *options]  # fmt: skip
    return argv, control


@contextmanager
def harness_client(server: Server, control: Path, token: str | None = None) -> Iterator[httpx.Client]:
    """A client of ``server`` (with the bearer ``token``, if any); on leaving, the backend is let go
    (``HOLD`` removed), the client closed and the server killed, whatever a test left behind."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = httpx.Client(base_url=server.url, headers=headers, timeout=120)
    try:
        yield client
    finally:
        (control / HOLD).unlink(missing_ok=True)
        client.close()
        server.kill()


class Server:
    """A server subprocess whose output goes to a file (a full pipe would stall it)."""

    def __init__(
        self, argv: list[str], log: Path, *, env: dict[str, str] | None = None, unset: Sequence[str] = ()
    ) -> None:
        self.log = log
        full_env = {k: v for k, v in os.environ.items() if k not in unset}
        full_env.update({"PYTHONPATH": str(REPO), **(env or {})})
        with log.open("wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)
        self.url = self._wait_listening()

    def _wait_listening(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.text()[-3000:]}")
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", self.text())
            if found and "Application startup complete" in self.text():
                return found.group(1)
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"server did not start within {START_TIMEOUT_S} s:\n{self.text()[-3000:]}")

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def metric(client: httpx.Client, name: str) -> float:
    """One unlabeled sample of /metrics (0 when absent)."""
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def labeled_metric(client: httpx.Client, name: str, **labels: str) -> float:
    """One labeled sample of /metrics (0 when absent), e.g. ``labeled_metric(c, "x_total", stage="hop")``."""
    for line in client.get("/metrics").text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line[len(name) : line.rindex("}") + 1]))
        if found == labels:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def open_request(url: str, path: str, body: dict, token: str | None = None) -> socket.socket:
    """Send one POST on a socket of its own and return the socket unread, so that a test can close
    the connection while the request waits (a client that gives up)."""
    host, port = url.removeprefix("http://").split(":")
    payload = json.dumps(body).encode("utf-8")
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
            f"Content-Length: {len(payload)}"]  # fmt: skip
    if token:
        head.append(f"Authorization: Bearer {token}")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
    return sock


def wait_until(check, what: str, timeout: float = 60) -> None:
    """Poll ``check`` (bounded); the condition is a state of the server, never a duration."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def searched(control: Path) -> list[str]:
    """Every query the test backend was asked, in order (``GatedRetriever`` appends them)."""
    log = control / SEARCHED
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


class GatedRetriever:
    """Word-overlap search that waits while ``control/hold`` exists, takes the seconds written in
    ``control/slow`` longer while that exists (a machine busy with something else), and raises while
    ``control/fail`` does (``ConnectionError`` when it holds "down", else ``RuntimeError``). Every query it is asked
    is appended to ``control/searched``, so a test can tell which questions reached the loop."""

    def __init__(self, corpus, control: Path) -> None:
        from efficientrag.testing.word_overlap import WordOverlapRetriever

        self.inner = WordOverlapRetriever(corpus)
        self.corpus = corpus
        self.control = control

    def search(self, queries, k):
        with (self.control / SEARCHED).open("a", encoding="utf-8") as log:
            log.writelines(q.replace("\n", " ") + "\n" for q in queries)
        deadline = time.monotonic() + 120
        while (self.control / HOLD).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        slow = self.control / SLOW
        if slow.exists():
            time.sleep(float(slow.read_text().strip() or 0))
        fail = self.control / FAIL
        if fail.exists():
            if fail.read_text().strip() == "down":
                raise ConnectionError("connection refused (the test backend is down)")
            raise RuntimeError("the test backend sent a malformed reply")
        return self.inner.search(queries, k)


def open_app(args, cfg):
    """The app over a ``GatedRetriever`` (in each worker process when ``cfg.workers`` > 1)."""
    from efficientrag.data.corpus import Corpus
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.serve.app import create_app
    from efficientrag.serve.contents import read_contents
    from efficientrag.serve.security import api_key_from_env

    retriever = GatedRetriever(Corpus.load(args.corpus), Path(args.control))
    loop = EfficientRAGConfig(
        labeler=args.labeler, filter=args.filter, floor_k=args.floor_k, top_k=args.top_k
    )
    rag = EfficientRAG.from_config(retriever, loop)
    contents = read_contents([args.corpus])
    return create_app(rag, cfg, backend=BACKEND, token=api_key_from_env(), contents=contents)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import functools
    import logging

    from efficientrag.config import load_config
    from efficientrag.serve.config import ServeConfig
    from efficientrag.serve.runner import run_server
    from efficientrag.serve.workers import run_workers

    parser = argparse.ArgumentParser()
    for name in ("corpus", "labeler", "filter", "control"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--floor-k", type=int, default=0, help="the loop's floor_k (kept whatever the tags)")
    parser.add_argument("--top-k", type=int, default=10, help="the loop's top_k (hits per query and hop)")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    cfg = load_config(ServeConfig, None, ["port=0", *args.overrides])
    if cfg.workers > 1:
        return run_workers(functools.partial(open_app, args, cfg), cfg)
    return run_server(open_app(args, cfg), cfg)


if __name__ == "__main__":
    sys.exit(main())
