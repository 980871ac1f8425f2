"""Command-line entry shared by ``train/labeler.py``, ``train/filter.py`` and ``efficientrag train``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from efficientrag.config import parse_args_with_overrides
from efficientrag.errors import ConfigError
from efficientrag.training.config import load_train_config
from efficientrag.training.threads import configure_cpu_threads


def build_parser(kind: str, *, distill: bool = False) -> argparse.ArgumentParser:
    what = (
        f"Distill a shallower {kind} from a trained one (teacher=FOLDER)" if distill else f"Train the {kind}"
    )
    parser = argparse.ArgumentParser(
        prog=f"train/distill.py {kind}" if distill else f"train/{kind}.py",
        description=f"{what} (run with `accelerate launch` for multi-GPU / DeepSpeed).",
    )
    preset = f"configs/distill/{kind}-minilm-cpu.yaml" if distill else f"configs/{kind}/minilm-cpu.yaml"
    parser.add_argument("--config", "-c", help=f"YAML preset, e.g. {preset}")
    parser.add_argument("--resume", action="store_true", help="continue from output_dir/checkpoints/last")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    return parser


def main(kind: str, argv: Sequence[str] | None = None, *, distill: bool = False) -> int:
    """Train ``kind``; with ``distill`` (train/distill.py) the config must name a ``teacher``."""
    args = parse_args_with_overrides(build_parser(kind, distill=distill), argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = load_train_config(kind, args.config, args.overrides)
    if distill and not cfg.teacher:
        raise ConfigError(f"distilling needs teacher=FOLDER (a trained {kind}'s best/) and student_depth=N")
    threads = configure_cpu_threads(cfg.cpu_threads)
    if threads is not None:
        print(f"cpu threads: {threads}", file=sys.stderr)
    from efficientrag.training.loop import train  # heavy imports only once the config is valid

    metrics = train(cfg, resume=args.resume)
    summary = {k: metrics.get(k) for k in ("completed", "global_step", "best_step", "best_score")}
    print(json.dumps(summary), file=sys.stdout)
    return 0
