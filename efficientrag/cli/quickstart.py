"""``efficientrag quickstart``: synthesis, training and the comparison in one resumable command."""

from __future__ import annotations

import argparse

from efficientrag.cli.command_config import command_overrides
from efficientrag.config import load_config
from efficientrag.errors import InvalidArgumentError


def cmd_quickstart(args: argparse.Namespace) -> int:
    """``efficientrag quickstart``: synthesis, Labeler and Filter training and the EfficientRAG vs
    Direct-R comparison on the toy world (or ``--dataset``/``--data``), resumable, in one command.

    Args:
        args: the parsed command line (``--config``, the data flags, overrides).

    Returns:
        0.

    Raises:
        ValueError: ``--dataset`` other than ``toy`` without ``--data`` (exit status 2 through
            :func:`main`).
    """
    from efficientrag.quickstart.job import QuickstartConfig, run_quickstart

    if args.dataset and args.dataset != "toy" and not args.data:
        raise InvalidArgumentError(f"--dataset {args.dataset} needs --data PATH (the dataset file)")
    cfg = load_config(QuickstartConfig, args.config, command_overrides(args, QuickstartConfig))
    summary = run_quickstart(cfg)
    print()
    print(summary["table"])
    lab, fil = summary["labeler"], summary["filter"]
    print(
        f"\nLabeler token F1 {lab.get('token_f1', 0):.3f}, tag accuracy {lab.get('tag_accuracy', 0):.3f}; "
        f"Filter token F1 {fil.get('token_f1', 0):.3f} (validation split of the synthesized data)"
    )
    print(f"report: {summary['report_path']}\nplot:   {summary['plot_path']}")
    return 0
