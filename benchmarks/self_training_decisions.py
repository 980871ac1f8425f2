"""Seconds per question of self-training's decision recording, one question at a time against
batched (one Labeler and one Filter call per hop for the whole batch, each decision attributed to
its question by the loop's observer), side by side in one run on the same questions and models.

The questions are cut into slices; each slice is recorded once per batch size, the order rotating
from slice to slice, so a background load slows every batch size alike. The recorded decisions
are compared too: the same pairs per question, with Continue probabilities that differ only by
padding noise.

    python benchmarks/self_training_decisions.py                  # HotpotQA train questions (60)
    python benchmarks/self_training_decisions.py --questions 120 --batch-sizes 1 8 16 32

Models: the dense protocol's Labeler/Filter trained on 2Wiki + MuSiQue (the un-adapted models of
``benchmarks/adaptation.py --retriever dense --targets hotpotqa``), with the setting it chose.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import retrieval_efficientrag as rb
import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared-data", default=str(rb.DEFAULT_SHARED))
    parser.add_argument("--work-dir", default=str(rb.REPO / "runs" / "bench_protocol"))
    parser.add_argument("--target", default="hotpotqa", choices=rb.DATASETS)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--slice", type=int, default=20)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args(argv)
    from efficientrag.adapt.self_training import Question, record_decisions
    from efficientrag.config import load_config
    from efficientrag.jsonl import read_jsonl
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG

    pargs = rb.ProtocolOptions(shared_data=args.shared_data, retriever="dense", no_combined=True, quiet=True)
    work = Path(args.work_dir) / "dense"
    others = [d for d in rb.DATASETS if d != args.target]
    models, _, pools = rb.train(pargs, work, others)
    _, overrides, _ = rb.choose(pargs, work, models, pools)
    pool = rb.open_pool(
        f"train-{args.target}", [(args.target, rb.TRAIN_FILES[args.target])], work / "pools", pargs
    )
    # The models themselves, not the benchmarks' prediction cache: the second batch size would
    # otherwise read the first one's predictions.
    rag = EfficientRAG(
        pool.retriever,
        Labeler.from_pretrained(models / "labeler" / "best"),
        Filter.from_pretrained(models / "filter" / "best"),
        load_config(EfficientRAGConfig, None, overrides),
    )
    questions = [Question(ex.id, ex.question) for ex in pool.examples[: args.questions]]
    seconds = dict.fromkeys(args.batch_sizes, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        out = {b: Path(tmp) / f"b{b}.jsonl" for b in args.batch_sizes}
        for i, start in enumerate(range(0, len(questions), args.slice)):
            part = questions[start : start + args.slice]
            order = (
                args.batch_sizes[i % len(args.batch_sizes) :] + args.batch_sizes[: i % len(args.batch_sizes)]
            )
            for b in order:
                t0 = time.perf_counter()
                record_decisions(rag, part, out[b], batch_size=b, progress=False)
                seconds[b] += time.perf_counter() - t0
        records = {b: list(read_jsonl(p)) for b, p in out.items()}
    ref = records[args.batch_sizes[0]]
    lines = [
        f"Command: `{shlex.join(['python', 'benchmarks/self_training_decisions.py', *sys.argv[1:]])}`",
        f"{len(questions)} {args.target} train questions, dense index, {torch.get_num_threads()} torch threads, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        "",
        "| batch size | s / question | speed-up | same pairs per question | max |Δp| |",
        "|---:|---:|---:|---|---:|",
    ]
    for b in args.batch_sizes:
        same = all(
            [(p["query"], p["chunk"]) for p in x["labeler"]]
            == [(p["query"], p["chunk"]) for p in y["labeler"]]
            for x, y in zip(ref, records[b], strict=True)
        )
        dp = max(
            (
                abs(p["p"] - q["p"])
                for x, y in zip(ref, records[b], strict=True)
                for p, q in zip(x["labeler"], y["labeler"], strict=False)
            ),
            default=0.0,
        )
        per_q = seconds[b] / len(questions)
        base = seconds[args.batch_sizes[0]] / len(questions)
        lines.append(f"| {b} | {per_q:.2f} | {base / per_q:.2f}x | {'yes' if same else 'no'} | {dp:.4f} |")
    print("\n".join(lines))
    print(json.dumps({str(b): round(s, 2) for b, s in seconds.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
