"""Training throughput: our loop (dynamic padding, length-grouped batches) vs the official setup
(every input padded to 384, random batches), same model, same rows, same steps, one invocation.

Each setting runs in its own child process so its peak memory is its own. Rows are a training set
folder (``--data DIR`` with train.jsonl/validation.jsonl) or, by default, Labeler rows built from the
real HotpotQA dev sample in ../shared/data (query = question, chunk = "title: paragraph", Continue =
supporting paragraph, useful words = answer words in supporting paragraphs): real lengths, which is
what padding cost depends on.

    python benchmarks/train_throughput.py                      # MiniLM, CPU-sized defaults
    python benchmarks/train_throughput.py --backbone microsoft/deberta-v3-large --steps 50 --rows 4096
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO.parent / "shared" / "data" / "hotpotqa" / "dev_ircot.350.jsonl"
SETTINGS = {
    "dynamic": {"group_by_length": True, "pad_to_max_length": False},
    "official-pad": {"group_by_length": False, "pad_to_max_length": True},
}


def hotpot_rows(path: Path, limit: int) -> list[dict]:
    from efficientrag.jsonl import read_jsonl
    from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE, LabelerRow
    from efficientrag.text.words import split_words

    rows = []
    for rec in read_jsonl(path):
        query = split_words(rec["question_text"])
        answer = {w.lower() for span in rec["answers_objects"][0]["spans"] for w in split_words(span)}
        for ctx in rec["contexts"]:
            words = split_words(f"{ctx['title']}: {ctx['paragraph_text']}")
            title = {w.lower() for w in split_words(ctx["title"])}
            useful = answer | title if ctx["is_supporting"] else set()
            labels = [int(w.lower() in useful and w.isalnum()) for w in words]
            tag = TAG_CONTINUE if ctx["is_supporting"] else TAG_TERMINATE
            row = LabelerRow(
                f"{rec['question_id']}-{ctx['id']}", rec["question_id"], query, words, labels, tag
            )
            rows.append(row.to_dict())
            if len(rows) >= limit:
                return rows
    return rows


def child(args: argparse.Namespace) -> None:
    from efficientrag.training import TrainConfig, train

    cfg = TrainConfig(
        model="labeler",
        backbone=args.backbone,
        data_dir=args.data,
        output_dir=args.output,
        learning_rate=5e-5,
        max_steps=args.steps,
        batch_size=args.batch_size,
        max_length=args.max_length,
        warmup_steps=0,
        eval_steps=0,
        save_steps=args.steps,
        max_eval_rows=16,
        mixed_precision=args.mixed_precision,
        seed=0,
        **SETTINGS[args.child],
    )
    metrics = train(cfg)
    print(
        "RESULT "
        + json.dumps(
            {
                k: metrics.get(k)
                for k in (
                    "train_samples_per_second",
                    "train_runtime_s",
                    "session_samples",
                    "peak_rss_mb",
                    "peak_gpu_memory_mb",
                    "train_truncation",
                    "mixed_precision",
                )
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backbone", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--data", help="folder with train.jsonl and validation.jsonl (Labeler rows)")
    parser.add_argument("--rows", type=int, default=640, help="rows built from the shared HotpotQA sample")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=384)
    parser.add_argument("--mixed-precision", default="auto")
    parser.add_argument("--child", choices=sorted(SETTINGS), help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        data = args.data
        if data is None:
            if not DEFAULT_SHARED.is_file():
                parser.error(f"{DEFAULT_SHARED} not found; pass --data DIR")
            from efficientrag.jsonl import write_jsonl

            rows = hotpot_rows(DEFAULT_SHARED, args.rows + 16)
            data = str(Path(tmp) / "data")
            write_jsonl(Path(data) / "train.jsonl", rows[: args.rows])
            write_jsonl(Path(data) / "validation.jsonl", rows[args.rows :])
        results = {}
        for name in SETTINGS:
            cmd = [
                sys.executable,
                __file__,
                "--child",
                name,
                "--data",
                data,
                "--output",
                str(Path(tmp) / name),
                "--backbone",
                args.backbone,
                "--steps",
                str(args.steps),
                "--batch-size",
                str(args.batch_size),
                "--max-length",
                str(args.max_length),
                "--mixed-precision",
                args.mixed_precision,
            ]
            proc = subprocess.run(
                cmd, capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"}
            )
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode or line is None:
                sys.exit(f"{name} run failed:\n{proc.stderr[-4000:]}")
            results[name] = json.loads(line[len("RESULT ") :])

    dyn, off = results["dynamic"], results["official-pad"]
    ratio = dyn["train_samples_per_second"] / off["train_samples_per_second"]
    mean_len = dyn["train_truncation"]["mean_length"]
    print(
        f"backbone {args.backbone}, {args.steps} steps x batch {args.batch_size}, max_length {args.max_length}, "
        f"mixed precision {dyn['mixed_precision']}, mean input length {mean_len:.0f} tokens"
    )
    print("| setting | samples/s | train s | peak RSS MB | peak GPU MB |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        gpu = r.get("peak_gpu_memory_mb")
        print(
            f"| {name} | {r['train_samples_per_second']:.2f} | {r['train_runtime_s']:.1f} | "
            f"{r['peak_rss_mb']:.0f} | {gpu:.0f} |"
            if gpu
            else f"| {name} | {r['train_samples_per_second']:.2f} | {r['train_runtime_s']:.1f} | {r['peak_rss_mb']:.0f} | - |"
        )
    print(f"speed-up (dynamic / official-pad): {ratio:.2f}x")


if __name__ == "__main__":
    main()
