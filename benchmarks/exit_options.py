"""The options the early-exit benchmarks share (the Labeler's, ``early_exit.py``, and the
cross-encoder's, ``cross_encoder_exit.py``): where the heads are fit and the thresholds validation
chooses from. A public interface for those scripts; nothing here is measured."""

from __future__ import annotations

import argparse
from pathlib import Path


def thresholds(text: str) -> list[float]:
    """``--thresholds``: comma-separated numbers in (0, 1], sorted and without repeats.

    Args:
        text: The option's value.

    Raises:
        argparse.ArgumentTypeError: Not numbers, or one outside (0, 1].
    """
    try:
        values = sorted({float(t) for t in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated numbers, got {text!r}") from None
    if not values or not all(0.0 < t <= 1.0 for t in values):
        raise argparse.ArgumentTypeError(f"thresholds must lie in (0, 1], got {text!r}")
    return values


def exit_arguments(parser: argparse.ArgumentParser, fit_world: str) -> None:
    """The heads' fit (rows, layers, quantile, the world whose pairs they also see) and the choice's
    candidates and tolerance.

    Args:
        parser: The script's parser (the options are added to it).
        fit_world: What the fit world's pairs are, for the help text.
    """
    parser.add_argument(
        "--rows",
        type=Path,
        default=Path("runs/quickstart/synth/labeler/train.jsonl"),
        help="Labeler rows to fit on",
    )
    parser.add_argument("--layers", default="2,4", help="the exit heads' layers")
    parser.add_argument("--quantile", type=float, default=0.9, help="the heads' upper quantile")
    parser.add_argument(
        "--fit-seed", type=int, default=3, help=f"the toy world whose {fit_world} the heads also fit"
    )
    parser.add_argument("--thresholds", type=thresholds, default=thresholds("0.01,0.02,0.05,0.1,0.2,0.3"))
    parser.add_argument("--tolerance", type=float, default=1.0, help="validation points a threshold may cost")


def threshold_table_head(thresholds: list[float], *leading: str) -> list[str]:
    """The head of a validation table with one column per threshold: the ``leading`` columns, full
    depth, each threshold, the one chosen.

    Args:
        thresholds: The candidate thresholds.
        leading: Columns before full depth (e.g. ``"method"``).
    """
    columns = [*leading, "full depth", *(f"exit < {t:g}" for t in thresholds), "chosen"]
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
