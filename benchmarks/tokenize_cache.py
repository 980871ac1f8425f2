"""Preparing training rows: direct tokenization vs the ``datasets`` path, cold and from its cache.

Rows (same rows, same tokenizer, same ``max_length``, one invocation):

- ``direct``: what training did before the ``datasets`` path: parse the JSONL line by line and call
  ``encode_rows`` on all rows (nothing kept between runs);
- ``datasets, cold``: ``prepare_split`` with an empty cache folder: JSON -> Arrow, row check and
  tokenization through ``Dataset.map``, written to the cache;
- ``datasets, warm``: the same call again, as a second run of the same config does: everything is
  read back from the Arrow cache.

The rows are Labeler rows from ``efficientrag.testing.token_tasks`` (``--data DIR`` takes a real
training set folder instead).

    python benchmarks/tokenize_cache.py                       # MiniLM, 20000 synthetic rows
    python benchmarks/tokenize_cache.py --data data/train/hotpotqa/labeler --kind labeler
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from efficientrag.hub import OFFLINE_DEFAULT_ENCODER
from efficientrag.models import Filter, Labeler
from efficientrag.testing.token_tasks import labeler_rows, write_rows
from efficientrag.training.data import read_rows
from efficientrag.training.encoded import prepare_split


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", help="training set folder (train.jsonl, validation.jsonl)")
    parser.add_argument("--kind", choices=["labeler", "filter"], default="labeler")
    parser.add_argument("--rows", type=int, default=20000, help="synthetic rows when --data is not given")
    parser.add_argument("--backbone", default=OFFLINE_DEFAULT_ENCODER)
    parser.add_argument("--max-length", type=int, default=256)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.data) if args.data else write_rows(Path(tmp) / "rows", labeler_rows(args.rows), [])
        model_cls = Labeler if args.kind == "labeler" else Filter
        model = model_cls.from_backbone(args.backbone, max_length=args.max_length, device="cpu")
        timings = []

        start = time.perf_counter()
        rows = read_rows(folder / "train.jsonl", args.kind).rows
        direct = model.encode_rows(rows, max_length=args.max_length)
        timings.append(("direct (read_rows + encode_rows)", time.perf_counter() - start, len(direct)))

        cache = Path(tmp) / "cache"
        for label in ("datasets, cold", "datasets, warm"):
            start = time.perf_counter()
            prepared = prepare_split(
                folder, "train", args.kind, model, max_length=args.max_length, cache_dir=cache
            )
            seconds = time.perf_counter() - start
            timings.append((f"{label} (cache hit: {prepared.from_cache})", seconds, len(prepared.dataset)))

    print(f"\n{len(direct)} {args.kind} rows, {args.backbone}, max_length {args.max_length}\n")
    print("| path | seconds | rows/s |")
    print("|---|---:|---:|")
    for label, seconds, n in timings:
        print(f"| {label} | {seconds:.2f} | {n / seconds:,.0f} |")


if __name__ == "__main__":
    main()
