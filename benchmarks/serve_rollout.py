"""A Search-R1 rollout's batch and bursts of refused callers against ``efficientrag serve``, over
loopback only.

1. **The rollout**: what Search-R1's client sends, one ``POST /retrieve`` of ``--rollout`` queries
   (the last three empty, as empty ``<search></search>`` tags send ``''``), with no timeout, then
   ``["result"]``: the status, the results and the seconds it took, under the server's default
   settings (its interactive ``serve.deadline_s`` does not apply to a batch that names no deadline).
2. **The bursts**: ``--bursts`` bursts of ``--burst-clients`` one-question ``/v1/retrieve`` callers
   at once, ``--burst-gap-s`` apart, each starting on an idle server: the statuses, and the
   ``Retry-After`` of the 503s (median and largest). A server that chained every promise it ever
   made told callers to wait longer after every burst; this one is bounded by the work it holds.

It takes the arguments of ``efficientrag serve`` (preset, data, models, ``key=value``); the questions
are the config's:

    python benchmarks/serve_rollout.py -c configs/experiments/toy.yaml \\
        --labeler runs/quickstart/models/labeler/best --filter runs/quickstart/models/filter/best
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import threading
import time
from collections import Counter

import httpx
from serve_load import Served, questions_of, resolve


def rollout(url: str, questions: list[str], n: int) -> dict:
    """One Search-R1 batch of ``n`` queries (the last three empty), no timeout, as its client sends it."""
    queries = [questions[i % len(questions)] for i in range(n - 3)] + ["", "", ""]
    started = time.perf_counter()
    reply = httpx.post(
        f"{url}/retrieve", json={"queries": queries, "topk": 3, "return_scores": True}, timeout=None
    )
    seconds = time.perf_counter() - started
    result = reply.json().get("result", []) if reply.status_code == 200 else []
    return {
        "status": reply.status_code,
        "results": len(result),
        "found": sum(1 for r in result if r),
        "seconds": seconds,
    }


def burst(url: str, questions: list[str], clients: int) -> dict:
    """``clients`` one-question requests at once; their statuses and the 503s' ``Retry-After``."""
    replies: list[tuple[int, str | None]] = [(0, None)] * clients

    def one(i: int) -> None:
        try:
            r = httpx.post(
                f"{url}/v1/retrieve", json={"question": questions[i % len(questions)]}, timeout=120
            )
            replies[i] = (r.status_code, r.headers.get("Retry-After"))
        except httpx.HTTPError:
            replies[i] = (0, None)  # no reply at all: lost

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summarize(replies, time.perf_counter() - started)


def summarize(replies: list[tuple[int, str | None]], seconds: float) -> dict:
    waits = [int(ra) for status, ra in replies if status == 503 and ra is not None]
    return {
        "statuses": dict(sorted(Counter(status for status, _ in replies).items())),
        "retry_median": statistics.median(waits) if waits else None,
        "retry_max": max(waits) if waits else None,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rollout", type=int, default=512, help="queries in the Search-R1 batch (>= 4)")
    parser.add_argument("--bursts", type=int, default=3, help="bursts of callers after the rollout")
    parser.add_argument("--burst-clients", type=int, default=200, help="callers per burst")
    parser.add_argument("--burst-gap-s", type=float, default=15, help="seconds between bursts")
    args, serve_args = parser.parse_known_args(argv)
    if args.rollout < 4 or args.bursts < 0 or args.burst_clients < 1 or args.burst_gap_s < 0:
        parser.error("--rollout must be >= 4, --burst-clients >= 1, --bursts and --burst-gap-s >= 0")
    print(
        "command: python benchmarks/serve_rollout.py "
        + shlex.join(argv if argv is not None else sys.argv[1:])
    )
    cfg = resolve(serve_args)
    questions = questions_of(cfg)
    if not questions:
        raise SystemExit("no questions: give a dataset with questions (--dataset/--data)")
    server = Served(serve_args)
    try:
        r = rollout(server.url, questions, args.rollout)
        lines = [
            f"rollout of {args.rollout} queries (3 empty), serve.deadline_s={cfg.serve.deadline_s:g}: HTTP "
            f"{r['status']}, {r['results']} results ({r['found']} with chunks), {r['seconds']:.1f} s",
            "",
            "| burst | statuses | Retry-After median / max (s) | seconds |",
            "|---|---|---|---|",
        ]
        for b in range(args.bursts):
            if b:
                time.sleep(args.burst_gap_s)
            s = burst(server.url, questions, args.burst_clients)
            waits = (
                f"{s['retry_median']} / {s['retry_max']}" if s["retry_max"] is not None else "none refused"
            )
            lines.append(f"| {b + 1} | {s['statuses']} | {waits} | {s['seconds']:.1f} |")
    finally:
        code = server.stop()
    lines.append(f"\nserver exit code after SIGTERM: {code}")
    print("\n".join(lines))
    return 0 if r["status"] == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
