"""Command-line entry of ``train/treehop.py`` (``accelerate launch train/treehop.py -c PRESET``).

The script is where a TreeHop run meets the data files: it prepares each training file the way an
experiment does (:func:`efficientrag.experiment.pools.open_pools`: pooled once under
``work_dir``, re-read when a file changes, indexed densely) and hands the pools to
:func:`efficientrag.treehop.training.train_treehop`, which takes the pools it is given.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from efficientrag.config import load_config, parse_args_with_overrides
from efficientrag.errors import ConfigError
from efficientrag.experiment.pools import open_pools
from efficientrag.training.threads import configure_cpu_threads


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train/treehop.py",
        description="Train TreeHop over a frozen dense encoder (run with `accelerate launch` for GPUs).",
    )
    parser.add_argument("--config", "-c", help="YAML preset, e.g. configs/treehop/minilm-cpu.yaml")
    parser.add_argument("--resume", action="store_true", help="continue from output_dir/checkpoints/last")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args_with_overrides(build_parser(), argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from efficientrag.treehop.config import TreeHopTrainConfig

    try:
        cfg = load_config(TreeHopTrainConfig, args.config, args.overrides)
        threads = configure_cpu_threads(cfg.cpu_threads)
        if threads is not None:
            print(f"cpu threads: {threads}", file=sys.stderr)
        from efficientrag.treehop.training import train_treehop  # heavy imports once the config is valid

        pools = open_pools(cfg.train_sets, cfg.retriever, cfg.work_dir, progress=cfg.progress)
        metrics = train_treehop(cfg, resume=args.resume, pools=pools)
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = {k: metrics.get(k) for k in ("completed", "global_step", "best_epoch", "best_score")}
    print(json.dumps(summary), file=sys.stdout)
    return 0 if metrics.get("completed") or metrics.get("global_step") else 1
