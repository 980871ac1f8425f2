"""RL trainers' load on ``efficientrag serve``: many one-query callers with a timeout, and a rollout's batch.

verl's SearchTool calls the Search-R1 ``/retrieve`` with about 120 concurrent callers, each sending
one query with a 30-second timeout and no deadline; Search-R1's own rollout sends its whole batch
(512 queries) in one request with no timeout. Both name no deadline, so the server tells them apart
by size (``serve.bulk_queries``) and sheds only the first kind (``serve.controlled_delay``). For
each client count (16, 64, 120, 256 by default), that many threads each send one-query
``/retrieve`` requests back to back for ``--seconds`` seconds,
with ``--client-timeout``; a 503 is retried after its Retry-After (as ``RemoteEfficientRAG`` does),
with the same question, a timeout closes the connection (as a trainer's client does) and the client
goes on with the next question. All clients take their questions from one shared sequence. Printed per
client count:

- goodput: requests answered within the window (``--seconds``), per second of it, and against
  the 16-client run's (answers still in flight when the window closes count in answered/sent, not in
  the goodput: dividing every answer by the time the last one took would let each row's tail of up
  to a deadline move its goodput by 10-20%);
- client timeouts; 503s with how fast they came (p50 / max seconds); any other status;
- computations for callers that left: questions the server computed (in part, ``hop``, or in full,
  ``finished``) whose caller had gone, from ``efficientrag_abandoned_total``, and those it dropped
  unqueued (``queued``: work saved); and the questions still queued or running when the clients
  stopped, and how long the server took to be idle again;
- p50 / p99 latency of the answered requests;
- where the goodput goes: the mean questions per batch, and the worker's busy share of the time
  (``efficientrag_batch_seconds_total`` against the run's wall time, its drain included);
- the server's RSS (with its worker processes), at most during the run and at its end.

Then, in the same server, the two kinds side by side (``--rollout``, ``--rollout-clients``): the
one-query callers again while a ``--rollout``-query Search-R1 batch is sent at the phase's start;
its row adds the batch's status, results and seconds.

One server serves every client count, in order; between them the benchmark waits for it to be idle.
``efficientrag_*`` counters come from ``/metrics`` (with ``serve.workers`` above 1 each scrape
reaches one process, so those columns then say ``n/a``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import threading
import time
from collections import Counter
from typing import Any

import httpx
import numpy as np
from serve_load import Served, questions_of, resolve

STAGES = ("queued", "hop", "finished")
# Where goodput goes: questions per batch, and the worker's busy time against the wall time.
BATCH_SAMPLES = (
    "efficientrag_batch_size_sum",
    "efficientrag_batch_size_count",
    "efficientrag_batch_seconds_total",
)


def scrape(url: str) -> dict[str, float]:
    """The unlabeled samples and ``efficientrag_abandoned_total`` by stage, from /metrics."""
    out: dict[str, float] = {}
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith("efficientrag_abandoned_total{"):
            stage = name.split('stage="', 1)[1].split('"', 1)[0]
            out[f"abandoned_{stage}"] = out.get(f"abandoned_{stage}", 0.0) + float(value)
        elif "{" not in name:
            out[name] = float(value)
    return out


class Load:
    """``clients`` threads of one-query ``/retrieve`` calls until ``seconds`` have passed."""

    def __init__(self, url: str, questions: list[str], clients: int, seconds: float, timeout: float) -> None:
        self.url, self.questions, self.clients = url, questions, clients
        self.stop_at = time.monotonic() + seconds
        self.timeout = timeout
        self.lock = threading.Lock()
        self.answered: list[float] = []
        self.in_window = 0  # answered by stop_at
        self.refused: list[float] = []
        self.timeouts = 0
        self.other: Counter[str] = Counter()
        self.sent = 0
        self.taken = 0

    def run(self) -> float:
        threads = [threading.Thread(target=self._client, daemon=True) for _ in range(self.clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.monotonic() - started

    def _next_question(self) -> str:
        """The next question of one shared sequence: every client count answers about the same
        questions in the same order (one question alone takes 1.6-4.3 s with the honest protocol's
        models, so rows serving different questions would differ by their mix, not their load)."""
        with self.lock:
            n = self.taken
            self.taken += 1
        return self.questions[n % len(self.questions)]

    def _client(self) -> None:
        with httpx.Client(base_url=self.url, timeout=self.timeout) as http:
            question = self._next_question()
            while time.monotonic() < self.stop_at:
                wait = self._one(http, question)
                if not wait:  # answered, or given up on: the next question
                    question = self._next_question()
                if wait:  # refused: the same question again after its Retry-After, as a trainer does
                    time.sleep(min(wait, max(0.0, self.stop_at - time.monotonic())))

    def _one(self, http: httpx.Client, question: str) -> float | None:
        """One call; the seconds to wait before the next (a 503's Retry-After), None after a
        transport error (1 s later, with the next question)."""
        t = time.monotonic()
        try:
            reply = http.post("/retrieve", json={"queries": [question], "topk": 3})
        except httpx.TimeoutException:
            with self.lock:
                self.sent += 1
                self.timeouts += 1
            return 0.0
        except httpx.HTTPError as exc:
            with self.lock:
                self.sent += 1
                self.other[type(exc).__name__] += 1
            time.sleep(1.0)
            return None
        took = time.monotonic() - t
        with self.lock:
            self.sent += 1
            if reply.status_code == 200:
                self.answered.append(took)
                self.in_window += time.monotonic() <= self.stop_at
            elif reply.status_code == 503:
                self.refused.append(took)
            else:
                self.other[str(reply.status_code)] += 1
        if reply.status_code == 503:
            return float(reply.headers.get("Retry-After", "1"))
        return 0.0


def wait_idle(url: str, limit_s: float = 300) -> float:
    """Seconds until nothing is queued or running (bounded)."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        m = scrape(url)
        if m.get("efficientrag_queue_depth", 0) == 0 and m.get("efficientrag_in_flight", 0) == 0:
            break
        time.sleep(0.5)
    return time.monotonic() - started


def send_rollout(url: str, questions: list[str], n: int, out: dict) -> None:
    """Search-R1's rollout: one ``/retrieve`` of ``n`` queries, no deadline and no client timeout."""
    queries = [questions[i % len(questions)] for i in range(n)]
    started = time.monotonic()
    reply = httpx.post(
        f"{url}/retrieve", json={"queries": queries, "topk": 3, "return_scores": True}, timeout=None
    )
    result = reply.json().get("result", []) if reply.status_code == 200 else []
    out.update(status=reply.status_code, results=len(result), seconds=time.monotonic() - started)


def one_count(
    server: Any, questions: list[str], clients: int, args: Any, per_process: bool, rollout: int = 0
) -> dict:
    before = scrape(server.url)
    load = Load(server.url, questions, clients, args.seconds, args.client_timeout)
    batch: dict[str, Any] = {}
    sender = threading.Thread(target=send_rollout, args=(server.url, questions, rollout, batch), daemon=True)
    if rollout:
        sender.start()
    peak = [server.rss_mib()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(1.0):
            peak.append(server.rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    wall = load.run()
    left = scrape(server.url)
    stopped = time.monotonic()
    if rollout:
        sender.join()  # the rollout has no timeout: the server is idle once it is answered
    idle_s = time.monotonic() - stopped + wait_idle(server.url)
    done.set()
    sampler.join()
    after = scrape(server.url)
    delta = {s: after.get(f"abandoned_{s}", 0.0) - before.get(f"abandoned_{s}", 0.0) for s in STAGES}
    change = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in BATCH_SAMPLES}
    ms = np.asarray(load.answered or [np.nan]) * 1000
    refused = np.asarray(load.refused or [np.nan])
    return {
        "clients": clients, "sent": load.sent, "ok": len(load.answered), "goodput": load.in_window / args.seconds,
        "timeouts": load.timeouts, "refused": len(load.refused), "refused_p50": float(np.median(refused)),
        "refused_max": float(np.max(refused)), "other": dict(load.other), "per_process": per_process,
        "computed_for_gone": delta["hop"] + delta["finished"], "hop": delta["hop"], "dropped": delta["queued"],
        "left": left.get("efficientrag_queue_depth", 0) + left.get("efficientrag_in_flight", 0),
        "idle_s": idle_s, "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
        "rss_max": max(peak), "rss_end": server.rss_mib(),
        "batch_mean": change["efficientrag_batch_size_sum"] / max(change["efficientrag_batch_size_count"], 1),
        "busy": change["efficientrag_batch_seconds_total"] / (wall + idle_s),
        "rollout": rollout, "batch": batch,
    }  # fmt: skip


HEADER = (
    "| clients | rollout (status, results, s) | answered/sent | goodput/s | vs 16 | client timeouts | 503s (p50 / max s) | other | "
    "computed for callers gone (of which stopped at a hop) | dropped unqueued | left at stop (idle after s) | "
    "p50 ms | p99 ms | batch mean | worker busy | RSS max / end MiB |\n|" + "---|" * 16
)


def row(r: dict, base: float) -> str:
    other = ", ".join(f"{k} x{v}" for k, v in sorted(r["other"].items())) or "0"
    refused = f"{r['refused']} ({r['refused_p50']:.2f} / {r['refused_max']:.2f})" if r["refused"] else "0"
    gone, dropped, left = (
        f"{r['computed_for_gone']:.0f} ({r['hop']:.0f})",
        f"{r['dropped']:.0f}",
        f"{r['left']:.0f}",
    )
    batch, busy = f"{r['batch_mean']:.1f}", f"{100 * r['busy']:.0f}%"
    if r["per_process"]:
        gone = dropped = left = batch = busy = "n/a"
    b = r["batch"]
    rollout = (
        f"{r['rollout']}: {b.get('status')}, {b.get('results')}, {b.get('seconds', 0):.1f}"
        if r["rollout"]
        else "none"
    )
    return (
        f"| {r['clients']} | {rollout} | {r['ok']}/{r['sent']} | {r['goodput']:.2f} | {r['goodput'] / base:.2f}x | "
        f"{r['timeouts']} | {refused} | {other} | {gone} | {dropped} | {left} ({r['idle_s']:.1f}) | "
        f"{r['p50']:.0f} | {r['p99']:.0f} | {batch} | {busy} | {r['rss_max']:.0f} / {r['rss_end']:.0f} |"
    )


def run_overload(server: Any, questions: list[str], args: Any, cfg: Any) -> int:
    """Every client count against one server, then both kinds side by side, then SIGTERM; prints
    the table. Exit code 1 when the rollout was not answered whole or no call was answered."""
    if not questions:
        raise SystemExit("no questions: give a dataset with questions (--dataset/--data) or raise --limit")
    per_process = cfg.serve.workers > 1
    s = cfg.serve
    print(f"{len(questions)} questions; backend {cfg.retriever.kind}; serve.workers={s.workers}, "
          f"max_batch={s.max_batch}, deadline_s={s.deadline_s}, queue_target_s={s.queue_target_s}, "
          f"queue_interval_s={s.queue_interval_s}, bulk_queries={s.bulk_queries}; client timeout "
          f"{args.client_timeout} s; {args.seconds:.0f} s per client count")  # fmt: skip
    try:
        Load(server.url, questions, 4, 5, args.client_timeout).run()  # warm-up: the rate is measured
        wait_idle(server.url)
        results = [one_count(server, questions, int(c), args, per_process) for c in args.clients.split(",")]
        if args.rollout:
            results.append(
                one_count(server, questions, args.rollout_clients, args, per_process, args.rollout)
            )
    finally:
        code = server.stop()
    base = results[0]["goodput"] or float("nan")
    print(HEADER)
    for r in results:
        print(row(r, base))
    print(f"server exit code after SIGTERM: {code}")
    whole = all(r["batch"].get("results") == r["rollout"] for r in results if r["rollout"])
    return 0 if whole and any(r["ok"] for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="16,64,120,256", help="client counts, the first the baseline")
    parser.add_argument("--seconds", type=float, default=60, help="seconds of load per client count")
    parser.add_argument("--client-timeout", type=float, default=30, help="each client's timeout, seconds")
    parser.add_argument(
        "--rollout", type=int, default=512, help="queries of the rollout's batch (0: no such phase)"
    )
    parser.add_argument(
        "--rollout-clients", type=int, default=120, help="one-query clients beside the rollout"
    )
    args, serve_args = parser.parse_known_args(argv)
    print(
        "command: python benchmarks/serve_overload.py "
        + shlex.join(argv if argv is not None else sys.argv[1:])
    )
    cfg = resolve(serve_args)
    return run_overload(Served(serve_args), questions_of(cfg), args, cfg)


if __name__ == "__main__":
    sys.exit(main())
