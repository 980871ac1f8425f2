"""Load on ``efficientrag serve`` against the library, in one run, over loopback only.

Throughput (questions/s) and p50/p95/p99 latency of one question per request through the server at
concurrency 1, 4, 16 and 64 clients, against the same questions one at a time through the library
(``EfficientRAG.retrieve``) in this process, with the ratios. ``--soak-s`` adds a soak at
concurrency 16 (errors, requests lost, the server's RSS at the start and at the end), and
``--bf16`` the single-question latency with ``efficientrag.quantize=bf16`` through the server
against the library call. Every count and duration is bounded (``--passes``, ``--soak-s``).

It takes the arguments of ``efficientrag serve`` (preset, data, models, ``key=value``): the server
is that command in a subprocess, the library loop is built in-process from the same config, and
the questions are the config's (``eval.ids_file`` / ``exclude_ids_file`` / ``--limit`` apply):

    python benchmarks/serve_load.py -c configs/experiments/hotpotqa.yaml --dataset hotpotqa \\
        --data ../shared/data/hotpotqa/dev.json --labeler L/best --filter F/best --limit 200 --soak-s 600 --bf16
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]


def resolve(serve_args: list[str]):
    """The serve command's config, exactly as ``efficientrag serve`` reads these arguments."""
    from efficientrag.cli.command_config import command_overrides
    from efficientrag.cli.parser import build_parser
    from efficientrag.config import load_config, parse_args_with_overrides
    from efficientrag.serve.config import ServeExperimentConfig

    ns = parse_args_with_overrides(build_parser(), ["serve", *serve_args])
    return load_config(ServeExperimentConfig, ns.config, command_overrides(ns, ServeExperimentConfig))


def questions_of(cfg) -> list[str]:
    """The config's questions (``eval.ids_file`` / ``exclude_ids_file`` / ``--limit`` apply)."""
    from efficientrag.experiment.assembly import select_examples
    from efficientrag.experiment.prepared_data import prepare_data

    return [ex.question for ex in select_examples(cfg, prepare_data(cfg).examples)]


def open_library(cfg):
    from efficientrag.experiment.assembly import (
        check_model_folders,
        search_backend,
        search_corpus,
        select_examples,
    )
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.pipeline.efficientrag import EfficientRAG

    check_model_folders(cfg, "efficientrag")
    pooled = prepare_data(cfg)
    questions = [ex.question for ex in select_examples(cfg, pooled.examples)]
    retriever = search_backend(cfg, search_corpus(cfg))  # what `efficientrag serve` opens
    return EfficientRAG.from_config(retriever, cfg.efficientrag), questions


class Served:
    """``efficientrag serve`` in a subprocess on a free loopback port (log in a temporary file)."""

    def __init__(self, serve_args: list[str], extra: Sequence[str] = ()) -> None:
        self.log = Path(tempfile.mkstemp(prefix="serve_load-", suffix=".log")[1])
        argv = [sys.executable, "-m", "efficientrag.cli", "serve", *serve_args, *extra,
                "--host", "127.0.0.1", "--port", "0", "serve.access_log=false"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 1800  # building an index may take long; bounded all the same
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", text)
            if found and "Application startup complete" in text:
                self.url = found.group(1)
                return
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited with {self.proc.returncode}:\n{text[-2000:]}")
            time.sleep(0.5)
        self.stop()
        raise SystemExit("server did not start within 30 minutes")

    def rss_mib(self) -> float:
        """The server's resident memory: its own and its worker processes' (``serve.workers``)."""
        return sum(_rss_mib(pid) for pid in _process_tree(self.proc.pid))

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=600)


def _process_tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            todo += [int(c) for c in task.read_text().split()]
    return out


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


class RssSampler:
    """The server's RSS every ``every_s`` seconds while a soak runs: whether memory levels off or
    keeps growing, which two end points cannot tell."""

    def __init__(self, server: Served, every_s: float) -> None:
        self.server, self.every_s, self.samples = server, every_s, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.samples.append(self.server.rss_mib())

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def library_one_at_a_time(rag, questions: list[str]) -> dict:
    rag.retrieve(questions[0])  # warm-up, not counted
    lat = []
    t0 = time.perf_counter()
    for q in questions:
        t = time.perf_counter()
        rag.retrieve(q)
        lat.append(time.perf_counter() - t)
    return summary(lat, len(questions), time.perf_counter() - t0, errors={}, lost=0)


def load(url: str, questions: list[str], clients: int, *, passes: int = 1, seconds: float = 0) -> dict:
    """``clients`` threads, each one request (one question) at a time: ``passes`` over the questions,
    or for ``seconds`` (soak). Lost: a request that got no HTTP reply at all."""
    work = iter([q for _ in range(passes) for q in questions]) if not seconds else None
    lock, lat, lost, sent = threading.Lock(), [], [0], [0]
    errors: Counter[int] = Counter()  # HTTP status -> count (504: the deadline, 503: the queue)
    stop_at = time.monotonic() + seconds

    def next_question(i: int) -> str | None:
        with lock:
            if work is not None:
                return next(work, None)
            return questions[(sent[0] + i) % len(questions)] if time.monotonic() < stop_at else None

    def client(i: int) -> None:
        with httpx.Client(base_url=url, timeout=300) as http:
            while (q := next_question(i)) is not None:
                with lock:
                    sent[0] += 1
                t = time.perf_counter()
                try:
                    reply = http.post("/v1/retrieve", json={"question": q})
                except httpx.HTTPError:
                    with lock:
                        lost[0] += 1
                    continue
                with lock:
                    if reply.status_code == 200:
                        lat.append(time.perf_counter() - t)
                    else:
                        errors[reply.status_code] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(lat, sent[0], time.perf_counter() - t0, errors=dict(errors), lost=lost[0])


def summary(lat: list[float], sent: int, wall: float, *, errors: dict[int, int], lost: int) -> dict:
    ms = np.asarray(lat) * 1000 if lat else np.asarray([np.nan])
    return {
        "sent": sent,
        "ok": len(lat),
        "errors": errors,
        "lost": lost,
        "qps": len(lat) / wall if wall else float("nan"),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "p99": float(np.percentile(ms, 99)),
    }


def error_cell(errors: dict[int, int]) -> str:
    """``0``, or the count with its HTTP statuses (``32 (504 x32)``): a deadline is not a crash."""
    total = sum(errors.values())
    return f"{total} ({', '.join(f'{code} x{n}' for code, n in sorted(errors.items()))})" if total else "0"


def row(name: str, s: dict, base: dict) -> str:
    return (
        f"| {name} | {s['ok']}/{s['sent']} | {error_cell(s['errors'])} | {s['lost']} | {s['qps']:.2f} | "
        f"{s['qps'] / base['qps']:.2f}x | {s['p50']:.0f} | {s['p95']:.0f} | {s['p99']:.0f} | "
        f"{s['p50'] / base['p50']:.2f}x |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", default="1,4,16,64", help="client counts (default 1,4,16,64)")
    parser.add_argument("--passes", type=int, default=1, help="passes over the questions per client count")
    parser.add_argument("--soak-s", type=float, default=0, help="seconds of soak at concurrency 16 (0: none)")
    parser.add_argument("--bf16", action="store_true", help="also single-question latency with quantize=bf16")
    parser.add_argument("--threads", type=int, default=0, help="torch threads in this process (0: default)")
    args, serve_args = parser.parse_known_args(argv)
    print(
        "command: python benchmarks/serve_load.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    )
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    cfg = resolve(serve_args)
    rag, questions = open_library(cfg)
    if not questions:
        raise SystemExit("no questions: give a dataset with questions (--dataset/--data) or raise --limit")
    print(
        f"{len(questions)} questions; backend {cfg.retriever.kind}; serve settings {dataclasses.asdict(cfg.serve)}"
    )
    base = library_one_at_a_time(rag, questions)
    lines = [
        "| run | ok/sent | errors | lost | questions/s | vs library | p50 ms | p95 ms | p99 ms | p50 vs library |",
        "|---|---|---|---|---|---|---|---|---|---|",
        row("library, one at a time", base, base),
    ]
    server = Served(serve_args)
    try:
        load(server.url, questions[:2], 1)  # warm-up, not counted
        for clients in (int(c) for c in args.concurrency.split(",")):
            lines.append(
                row(
                    f"server, {clients} clients",
                    load(server.url, questions, clients, passes=args.passes),
                    base,
                )
            )
        if args.soak_s > 0:
            rss0 = server.rss_mib()
            with RssSampler(server, every_s=args.soak_s / 10) as rss:
                soak = load(server.url, questions, 16, seconds=args.soak_s)
            lines.append(row(f"soak {args.soak_s:.0f} s, 16 clients", soak, base))
            lines.append(f"\nsoak: RSS {rss0:.0f} MiB at the start, {server.rss_mib():.0f} MiB at the end")
            lines.append("soak: RSS every tenth of it (MiB): " + ", ".join(f"{m:.0f}" for m in rss.samples))
    finally:
        code = server.stop()
    lines.append(f"server exit code after SIGTERM: {code}")
    if args.bf16:
        bf16 = dataclasses.replace(cfg.efficientrag, quantize="bf16")
        from efficientrag.pipeline.efficientrag import EfficientRAG

        lib16 = library_one_at_a_time(EfficientRAG.from_config(rag.retriever, bf16), questions)
        server = Served(serve_args, ["efficientrag.quantize=bf16"])
        try:
            load(server.url, questions[:2], 1)
            srv16 = load(server.url, questions, 1)
        finally:
            server.stop()
        lines += ["", "bf16, one question at a time:", lines[0], lines[1],
                  row("library bf16", lib16, lib16), row("server bf16, 1 client", srv16, lib16)]  # fmt: skip
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
