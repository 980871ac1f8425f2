"""``efficientrag train exit-head``: fit the Labeler's early-exit heads on its own outputs and save
them beside the Labeler (``LABELER/early_exit/``), so ``efficientrag.exit_threshold`` can use them."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from efficientrag.config import load_config, parse_args_with_overrides
from efficientrag.errors import ConfigError, EfficientRAGError, MissingFileError

# What the command prints of each head's fit (the saved config.json holds all of it).
HELD_OUT_KEYS = ("pairs", "logit_mae", "rank_agreement", "upper_coverage", "by_threshold")


def build_parser(prog: str = "efficientrag train exit-head") -> argparse.ArgumentParser:
    """The options of ``efficientrag train exit-head``."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Fit the Labeler's early-exit heads to the Labeler's own Continue scores (minutes on "
        "a CPU; the Labeler is not changed) and save them in LABELER/early_exit/.",
    )
    parser.add_argument("--labeler", required=True, help="the trained Labeler folder (its best/)")
    parser.add_argument(
        "--data",
        required=True,
        help="Labeler rows to fit on (a train.jsonl, or the training set folder holding one)",
    )
    parser.add_argument("--config", "-c", help="YAML with the fit's settings (layers, quantile, ...)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "overrides", nargs="*", metavar="key=value", help="fit settings, e.g. layers=[2,4] quantile=0.9"
    )
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "efficientrag train exit-head") -> int:
    """Fit and save the heads; bad input ends with one ``error:`` line and status 2.

    Args:
        argv: The arguments (None: ``sys.argv[1:]``).
        prog: The program name shown in the usage line.

    Returns:
        0 once the heads are saved; 2 for bad input.
    """
    args = parse_args_with_overrides(build_parser(prog), argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from efficientrag.training.exit_head import ExitHeadConfig

    try:
        cfg = load_config(ExitHeadConfig, args.config, args.overrides)
        data = Path(args.data)
        rows_file = data / "train.jsonl" if data.is_dir() else data
        if not rows_file.is_file():
            raise MissingFileError(f"--data: no Labeler rows at {rows_file}")
        from efficientrag.models import Labeler
        from efficientrag.training.data import read_rows
        from efficientrag.training.exit_head import fit_exit_head

        labeler = Labeler.from_pretrained(args.labeler, device="cpu")
        rows = read_rows(rows_file, "labeler").rows
        early_exit = fit_exit_head(labeler, rows, cfg, show_progress=not args.quiet)
        folder = early_exit.save(args.labeler)
    except (ConfigError, FileNotFoundError, EfficientRAGError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = {
        "saved": str(folder),
        "layers": early_exit.layers,
        "rows": early_exit.fit["rows"],
        "held_out": {
            layer: {k: (part.get("held_out") or part["train"]).get(k) for k in HELD_OUT_KEYS}
            for layer, part in early_exit.fit["layers"].items()
        },
    }
    print(json.dumps(summary), file=sys.stdout)
    return 0
