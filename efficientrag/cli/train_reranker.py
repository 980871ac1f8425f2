"""Command-line entry of ``train/reranker.py`` and ``efficientrag train reranker``.

The script is where a reranker run meets the data files: it prepares each training file the way an
experiment does (:func:`efficientrag.experiment.pools.open_pools`: pooled once under
``work_dir``, indexed with the run's search) and hands the pools to
:func:`efficientrag.training.reranker.train_reranker`, which takes the pools it is given.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from efficientrag.config import load_config, parse_args_with_overrides
from efficientrag.errors import ConfigError
from efficientrag.experiment.pools import open_pools
from efficientrag.training.reranker_config import RerankerTrainConfig

PRESET = "configs/reranker/minilm-cpu.yaml"


def build_parser(prog: str = "train/reranker.py") -> argparse.ArgumentParser:
    """The options of ``train/reranker.py`` (and ``efficientrag train reranker``)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Train the cross-encoder reranker of the `rerank` method (run with `accelerate launch` "
        "for GPUs).",
    )
    parser.add_argument("--config", "-c", help=f"YAML preset, e.g. {PRESET}")
    parser.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in output_dir"
    )
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "train/reranker.py") -> int:
    """Train the reranker; bad input ends with one ``error:`` line and status 2.

    Args:
        argv: The arguments (None: ``sys.argv[1:]``).
        prog: The program name shown in the usage line.

    Returns:
        0 when training completed or a session ended at ``stop_after_steps``; 2 for bad input.
    """
    args = parse_args_with_overrides(build_parser(prog), argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_config(RerankerTrainConfig, args.config, args.overrides)
        check_train_files(cfg)
        from efficientrag.training.reranker import backbone_path, train_reranker  # heavy imports
        from efficientrag.training.threads import configure_cpu_threads

        backbone_path(cfg.backbone)  # a bad backbone fails before any file is indexed
        threads = configure_cpu_threads(cfg.cpu_threads)
        if threads is not None:
            print(f"cpu threads: {threads}", file=sys.stderr)
        pools = open_pools(cfg.train_sets, cfg.retriever, cfg.work_dir, progress=cfg.progress)
        metrics = train_reranker(cfg, resume=args.resume, pools=pools)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keys = ("completed", "global_step", "best_epoch", "best_score", "best")
    print(json.dumps({k: metrics.get(k) for k in keys}), file=sys.stdout)
    return 0


def check_train_files(cfg: RerankerTrainConfig) -> None:
    """A training file that does not exist is named with its key before anything is read.

    Raises:
        ConfigError: ``train_sets[i].path`` or ``.corpus_path`` names a missing file (Hub sources
            are left to the reader; a toy world's ``path`` is where it is written).
    """
    for i, data in enumerate(cfg.train_sets):
        files = {"path": data.path if data.dataset != "toy" else None, "corpus_path": data.corpus_path}
        for key, path in files.items():
            if path and not path.startswith("hub") and not Path(path).expanduser().exists():
                raise ConfigError(f"config 'train_sets[{i}].{key}': no such file {path!r} ({data.dataset})")
