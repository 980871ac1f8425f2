"""``efficientrag train exit-head``: fit the early-exit heads of the Labeler (or of the ``rerank``
method's cross-encoder) on the model's own outputs and save them in its folder
(``MODEL/early_exit/``), so ``efficientrag.exit_threshold`` (``baselines.rerank.exit_threshold``)
can use them."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efficientrag.config import load_config, parse_args_with_overrides
from efficientrag.errors import ConfigError, EfficientRAGError, MissingFileError

# What the command prints of each head's fit (the saved config.json holds all of it).
HELD_OUT_KEYS = ("pairs", "logit_mae", "rank_agreement", "upper_coverage", "by_threshold")


def build_parser(prog: str = "efficientrag train exit-head") -> argparse.ArgumentParser:
    """The options of ``efficientrag train exit-head``."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Fit early-exit heads to a trained model's own scores: the Labeler's Continue "
        "probability, or a cross-encoder's score (minutes on a CPU; the model is not changed), and save "
        "them in MODEL/early_exit/.",
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--labeler", help="the trained Labeler folder (its best/)")
    model.add_argument(
        "--cross-encoder", help="a saved cross-encoder folder (`efficientrag train reranker`'s best/)"
    )
    parser.add_argument(
        "--data",
        required=True,
        help="Labeler rows to fit on (a train.jsonl, or the training set folder holding one); for a "
        "cross-encoder, their query and chunk words are the pairs (no label is read)",
    )
    parser.add_argument("--config", "-c", help="YAML with the fit's settings (layers, quantile, ...)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "overrides", nargs="*", metavar="key=value", help="fit settings, e.g. layers=[2,4] quantile=0.9"
    )
    return parser


def fit(args: argparse.Namespace, rows: list[Any], cfg: Any) -> tuple[Any, Path]:
    """The heads of the model the command names, fit on ``rows`` and saved in its folder."""
    if args.labeler:
        from efficientrag.models import Labeler
        from efficientrag.training.exit_head import fit_exit_head

        labeler = Labeler.from_pretrained(args.labeler, device="cpu")
        early_exit = fit_exit_head(labeler, rows, cfg, show_progress=not args.quiet)
        return early_exit, early_exit.save(args.labeler)
    from efficientrag.models.cross_encoder import check_cross_encoder_folder, load_cross_encoder
    from efficientrag.training.cross_encoder_exit import fit_cross_encoder_exit, pairs_from_rows

    folder = check_cross_encoder_folder(args.cross_encoder)
    model = load_cross_encoder(folder, device="cpu")
    early_exit = fit_cross_encoder_exit(model, pairs_from_rows(rows), cfg, show_progress=not args.quiet)
    return early_exit, early_exit.save(folder)


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
        from efficientrag.training.data import read_rows

        rows = read_rows(rows_file, "labeler").rows
        early_exit, folder = fit(args, rows, cfg)
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
