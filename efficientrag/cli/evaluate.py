"""``efficientrag eval`` and ``efficientrag report``: evaluate one method, then compare run folders."""

from __future__ import annotations

import argparse
import sys

from efficientrag.cli.command_config import experiment_config


def cmd_eval(args: argparse.Namespace) -> int:
    """``efficientrag eval``: :func:`efficientrag.eval.evaluate` on the experiment config, then its
    table; the exit status is 1 when more questions failed than ``eval.max_failures`` allows.

    Args:
        args: the parsed command line (``--config``, the flags, ``--no-resume``, ``--wait``).

    Returns:
        0, or 1 (too many failures, or a run that stopped early); an interrupt propagates to
        :func:`efficientrag.cli.main.main`, which reports it.
    """
    from efficientrag.eval.evaluation import evaluate
    from efficientrag.eval.runner import RunAbortedError

    cfg = experiment_config(args)
    try:
        summary = evaluate(
            cfg,
            resume=cfg.eval.resume and not args.no_resume,
            wait_for_lock=cfg.eval.wait_for_lock or args.wait,
        )
    except RunAbortedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary.table)
    print(f"{summary.n} questions; per-question records in {summary.predictions_file}")
    if summary.num_failed:
        allowed = cfg.eval.max_failures
        print(
            f"{summary.num_failed} of {summary['num_examples']} questions failed (eval.max_failures={allowed}); "
            f"reasons in {summary.errors_file}; rerunning the command retries them",
            file=sys.stderr,
        )
        if summary.num_failed > allowed or summary.n == 0:
            return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``efficientrag report``: one Markdown report (tables, the papers' numbers, plots) over
    several evaluation run folders, printed and written to ``--out``.

    Args:
        args: the parsed command line (run folders, ``--out``, ``--title``, ``--qa-note``).

    Returns:
        0.
    """
    from efficientrag.eval.report import write_report

    path = write_report(args.runs, args.out, title=args.title, qa_source_note=args.qa_note)
    print(path.read_text(encoding="utf-8"))
    print(f"report written to {path} (with report.json and plots beside it)")
    return 0
