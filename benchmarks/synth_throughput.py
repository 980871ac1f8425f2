"""Throughput of the synthesis LLM stages (decompose, label) through the real LLM teacher, the
real async client (cache on) and the real stage runner, against the fake OpenAI server with a
fixed latency per call, at several concurrencies, next to the ideal.

The server runs in its own process (so its threads do not compete with the pipeline for the
GIL) and answers with the synthesis oracle, which writes each reply from the prompt; the data is
the toy world, sized so that every setting keeps its workers busy for several rounds. The ideal
is ``concurrency / latency`` calls per second: what a pipeline with no overhead of its own would
reach. A small warm-up run goes first and is not reported. Efficiency is measured on HTTP calls (records answered by the cache, identical requests
within one run, need no call); records/s is shown next to it.

    python benchmarks/synth_throughput.py                     # latency 0.3 s; concurrency 1 8 32 64
    python benchmarks/synth_throughput.py --concurrency 32 --waves 10 --json runs/bench/synth.json
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGES = ("decompose", "label")


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "efficientrag.testing.fake_openai",
            "--latency",
            str(latency),
            "--script",
            "efficientrag.testing.synth_oracle:respond",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    base_url = proc.stdout.readline().strip()
    if not base_url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"fake server did not start (printed {base_url!r})")
    return proc, base_url


def run_one(base_url: str, concurrency: int, num_questions: int, work: Path) -> list[dict]:
    from efficientrag.data.config import DataConfig, ToyWorldConfig
    from efficientrag.data.loader import load_data
    from efficientrag.llm.config import LLMConfig
    from efficientrag.synth.config import SynthConfig
    from efficientrag.synth.pipeline import run_synthesis

    pooled = load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(seed=0, num_questions=num_questions)))
    out = work / f"c{concurrency}"
    cfg = SynthConfig(
        teacher="llm",
        stages=list(STAGES),
        out_dir=str(out),
        concurrency=concurrency,
        progress=False,
        llm=LLMConfig(base_url=base_url, model="fake-model", cache_dir=str(work / f"cache-c{concurrency}")),
    )
    result = run_synthesis(cfg, corpus=pooled.corpus, examples=pooled.examples)
    usage = json.loads((out / "llm_usage.json").read_text())["stages"]
    rows = []
    for stage in STAGES:
        st = result["stages"][stage]
        u = usage[stage]
        rows.append(
            {
                "concurrency": concurrency,
                "stage": stage,
                "records": st["new_written"] + st["new_rejected"],
                "http_calls": u["calls"] - u["cached"],
                "retries": u["retries"],
                "seconds": st["seconds"],
            }
        )
    rows.append(
        {
            "concurrency": concurrency,
            "stage": "decompose+label",
            **{k: sum(r[k] for r in rows) for k in ("records", "http_calls", "retries", "seconds")},
        }
    )
    return rows


def table(rows: list[dict], latency: float) -> str:
    head = (
        "| concurrency | stage | records | HTTP calls | seconds | records/s | calls/s | ideal calls/s "
        "(concurrency / latency) | % of ideal |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        ideal = r["concurrency"] / latency
        calls_per_s = r["http_calls"] / r["seconds"]
        lines.append(
            f"| {r['concurrency']} | {r['stage']} | {r['records']} | {r['http_calls']} | {r['seconds']:.2f} | "
            f"{r['records'] / r['seconds']:.1f} | {calls_per_s:.1f} | {ideal:.1f} | {100 * calls_per_s / ideal:.0f}% |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the fake server waits per call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument(
        "--waves", type=int, default=6, help="rounds of decompose calls per setting (label has ~2.4x more)"
    )
    parser.add_argument("--min-questions", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)

    proc, base_url = start_server(args.latency)
    rows: list[dict] = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="synth-bench-") as tmp:
            # Warm-up, not reported: the server's first label request loads spaCy (~0.3 s), and
            # this process imports the pipeline.
            run_one(base_url, 2, 4, Path(tmp) / "warmup")
            for c in args.concurrency:
                n = max(args.min_questions, math.ceil(c * args.waves))
                rows += run_one(base_url, c, n, Path(tmp))
                print(f"concurrency {c}: {n} questions done", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    command = "python benchmarks/synth_throughput.py " + " ".join(
        [
            f"--latency {args.latency:g}",
            "--concurrency " + " ".join(str(c) for c in args.concurrency),
            f"--waves {args.waves}",
            f"--min-questions {args.min_questions}",
        ]
    )
    print(f"Synthesis LLM stages, fake server latency {args.latency:g} s per call (toy world, cache on):\n")
    print(table(rows, args.latency))
    print(f"\nTotal wall time {time.monotonic() - started:.0f} s. Rerun: `{command}`")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"latency": args.latency, "command": command, "rows": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
