"""Command-line entry shared by ``train/labeler.py``, ``train/filter.py`` and ``efficientrag train``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from efficientrag.config import parse_args_with_overrides
from efficientrag.training.config import load_train_config
from efficientrag.training.threads import configure_cpu_threads


def build_parser(kind: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"train/{kind}.py",
        description=f"Train the {kind} (run with `accelerate launch` for multi-GPU / DeepSpeed).",
    )
    parser.add_argument("--config", "-c", help=f"YAML preset, e.g. configs/{kind}/minilm-cpu.yaml")
    parser.add_argument("--resume", action="store_true", help="continue from output_dir/checkpoints/last")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    return parser


def main(kind: str, argv: Sequence[str] | None = None) -> int:
    args = parse_args_with_overrides(build_parser(kind), argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = load_train_config(kind, args.config, args.overrides)
    threads = configure_cpu_threads(cfg.cpu_threads)
    if threads is not None:
        print(f"cpu threads: {threads}", file=sys.stderr)
    from efficientrag.training.loop import train  # heavy imports only once the config is valid

    metrics = train(cfg, resume=args.resume)
    summary = {k: metrics.get(k) for k in ("completed", "global_step", "best_step", "best_score")}
    print(json.dumps(summary), file=sys.stdout)
    return 0
