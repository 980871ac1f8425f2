"""``efficientrag adapt`` and ``efficientrag distill``: the jobs that make new Labeler/Filter models from
trained ones, each printing the flags that pick its resulting models."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from efficientrag.cli.command_config import job_config, models_line, run_job


def cmd_adapt(args: argparse.Namespace) -> int:
    """``efficientrag adapt``: fine-tune trained models for a new corpus without gold labels, then
    print which models to use (a warning when the given ones scored better, or were not compared).

    Args:
        args: the parsed command line (``--config``, ``--corpus``, ``--labeler``, ``--filter``,
            ``--train-data``, ``--questions``, ``--validation``, ``--work-dir``, overrides).

    Returns:
        0, whichever models were kept.
    """
    from efficientrag.adapt.config import AdaptConfig
    from efficientrag.adapt.job import run_adapt

    flags = ("corpus", "labeler", "filter", "train_data", "questions", "validation", "work_dir")
    cfg = job_config(AdaptConfig, args, flags)
    summary = run_job(run_adapt, cfg, ("labeler", "filter", "timings_s"))
    cmp = summary["comparison"]
    if cmp["kept"] == "given":
        loud = (
            f"WARNING: the adapted models scored lower than the given ones "
            f"({cmp['adapted']['score']:.2f} < {cmp['given']['score']:.2f}; {summary['adapted']['labeler']}): "
            "keep using the given models"
        )
        print(loud, file=sys.stderr)
        print(models_line("given models (better)", summary))
    else:
        if not cmp["compared"]:
            print(
                "WARNING: the adapted models were not compared with the given ones (no pseudo-validation "
                "question and no --validation questions)",
                file=sys.stderr,
            )
        print(models_line("adapted models", summary))
    print(method_line(summary["method"], cfg.corpus))
    return 0


def method_line(method: dict[str, Any], corpus: str) -> str:
    """The retrieval method adapt chose for the kept models (each candidate's score), and the
    command that retrieves with it."""
    scores = method.get("candidates", {})
    why = ", ".join(f"{name} {c['score']:.2f}" for name, c in scores.items()) or method.get("why", "")
    return (
        f"method: {method['chosen']} ({why}); retrieve with: efficientrag retrieve -c {method['preset']} "
        f"--corpus {corpus} -q QUESTION"
    )


def cmd_distill(args: argparse.Namespace) -> int:
    """``efficientrag distill``: train shallower Labeler/Filter students from trained ones, then
    print the students' folders.

    Args:
        args: the parsed command line (``--config``, ``--labeler``, ``--filter``, ``--train-data``,
            ``--questions``, ``--corpus``, ``--depth``, ``--work-dir``, overrides).

    Returns:
        0.
    """
    from efficientrag.distill.config import DistillConfig
    from efficientrag.distill.job import run_distill

    flags = ("labeler", "filter", "train_data", "questions", "corpus", "work_dir", "depth")
    summary = run_job(run_distill, job_config(DistillConfig, args, flags), ("labeler", "filter", "stages"))
    print(models_line("distilled models", summary))
    return 0
