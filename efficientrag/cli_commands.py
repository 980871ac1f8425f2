"""What each ``efficientrag`` command does: the ``cmd_*`` functions, and how a command's config is
assembled from its preset, its flags and its ``key=value`` overrides.

Each command loads its config, calls the library and prints what a person needs to see; the
parser that routes to them is :mod:`efficientrag.cli_parser`, the entry that runs them and turns
expected failures into exit statuses is :mod:`efficientrag.cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from efficientrag.cli_flags import flag_overrides
from efficientrag.config import load_config

T = TypeVar("T")


def cmd_corpus(args: argparse.Namespace) -> int:
    """``efficientrag corpus``: read the dataset and write the pooled, de-duplicated corpus (and
    examples) to the experiment's data folder, so every later command reads one corpus.

    Args:
        args: the parsed command line (``--config``, the data flags, ``--rebuild``, overrides).

    Returns:
        0; bad input raises, which :func:`main` reports as one line and exit status 2.
    """
    from efficientrag.eval.prepared_data import prepare_data

    cfg = _experiment_config(args)
    pooled = prepare_data(cfg, rebuild=args.rebuild)
    print(json.dumps(pooled.stats, indent=2))
    print(f"wrote {len(pooled.corpus)} chunks and {len(pooled.examples)} examples to {cfg.data_dir}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """``efficientrag index``: build the retrieval index over the prepared corpus, or verify that
    the saved one matches the config (a mismatch fails rather than overwrite hours of encoding).

    Args:
        args: the parsed command line (``--config``, the data flags, ``--rebuild``, overrides).

    Returns:
        0; a mismatching index or bad input raises (exit status 2 through :func:`main`).
    """
    from efficientrag.eval.prepared_data import prepare_data
    from efficientrag.retrieval.factory import build_retriever

    cfg = _experiment_config(args)
    pooled = prepare_data(cfg)
    retriever = build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir, rebuild=args.rebuild)
    where = getattr(retriever, "location", cfg.index_dir)
    print(f"index ready at {where} ({len(pooled.corpus)} chunks)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """``efficientrag eval``: :func:`efficientrag.eval.evaluate` on the experiment config, then its
    table; the exit status is 1 when more questions failed than ``eval.max_failures`` allows.

    Args:
        args: the parsed command line (``--config``, the flags, ``--no-resume``, ``--wait``).

    Returns:
        0, 1 (too many failures, or a run that stopped early), or an interrupted run's status.
    """
    from efficientrag.eval.evaluation import evaluate
    from efficientrag.eval.interrupts import RunInterrupted, ignore_further_stop_signals
    from efficientrag.eval.runner import RunAbortedError

    cfg = _experiment_config(args)
    try:
        summary = evaluate(
            cfg,
            resume=cfg.eval.resume and not args.no_resume,
            wait_for_lock=cfg.eval.wait_for_lock or args.wait,
        )
    except RunInterrupted as exc:
        ignore_further_stop_signals()  # the process is on its way out: a repeated Ctrl-C changes nothing
        print(exc.message(), file=sys.stderr)
        return exc.exit_code
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


def cmd_retrieve(args: argparse.Namespace) -> int:
    """``efficientrag retrieve``: run the EfficientRAG loop on one question and print its hops (or,
    with ``--json``, the chunks and trace), to see what the trained models do.

    Args:
        args: the parsed command line (``--config``, the data and model flags, ``--question``,
            ``--json``, overrides).

    Returns:
        0; an empty question, missing model folders or bad input raise (exit status 2).
    """
    from efficientrag.eval.assembly import check_model_folders, search_backend, search_corpus
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.inputs import check_questions
    from efficientrag.pipeline.trace import trace_to_dicts
    from efficientrag.pipeline.trace_format import format_result

    cfg = _experiment_config(args)
    check_questions([args.question], source="--question")
    check_model_folders(cfg, "efficientrag")
    # A Milvus collection needs no dataset to be asked a question, but a --corpus must be its own.
    retriever = search_backend(cfg, search_corpus(cfg))
    rag = EfficientRAG.from_config(retriever, cfg.efficientrag)
    result = rag.retrieve(args.question)
    if args.json:
        print(
            json.dumps(
                {
                    "question": result.question,
                    "chunks": [c.to_dict() for c in result.chunks],
                    "trace": trace_to_dicts(result.trace),
                },
                indent=2,
            )
        )
    else:
        print(format_result(result))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """``efficientrag serve``: open the loop once and answer over HTTP until SIGTERM/SIGINT.

    Args:
        args: the parsed command line (``--config``, the data and model flags, ``--host``,
            ``--port``, ``--workers``, overrides; those three win over both).

    Returns:
        The server's exit status (0 after a drained stop).
    """
    from efficientrag.serve.config import ServeExperimentConfig
    from efficientrag.serve.startup import serve

    # --host/--port/--workers given on the command line win over the preset and key=value.
    flags = ("host", "port", "workers")
    ports = [f"serve.{k}={getattr(args, k)}" for k in flags if getattr(args, k) is not None]
    return serve(
        load_config(ServeExperimentConfig, args.config, [*_overrides(args, ServeExperimentConfig), *ports])
    )


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
        raise ValueError(f"--dataset {args.dataset} needs --data PATH (the dataset file)")
    cfg = load_config(QuickstartConfig, args.config, _overrides(args, QuickstartConfig))
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
    summary = _run_job(run_adapt, _job_config(AdaptConfig, args, flags), ("labeler", "filter", "timings_s"))
    cmp = summary["comparison"]
    if cmp["kept"] == "given":
        loud = (
            f"WARNING: the adapted models scored lower than the given ones "
            f"({cmp['adapted']['score']:.2f} < {cmp['given']['score']:.2f}; {summary['adapted']['labeler']}): "
            "keep using the given models"
        )
        print(loud, file=sys.stderr)
        print(_models_line("given models (better)", summary))
        return 0
    if not cmp["compared"]:
        print(
            "WARNING: the adapted models were not compared with the given ones (no pseudo-validation "
            "question and no --validation questions)",
            file=sys.stderr,
        )
    print(_models_line("adapted models", summary))
    return 0


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
    summary = _run_job(run_distill, _job_config(DistillConfig, args, flags), ("labeler", "filter", "stages"))
    print(_models_line("distilled models", summary))
    return 0


def _experiment_config(args: argparse.Namespace):
    from efficientrag.eval.experiment import ExperimentConfig

    return load_config(ExperimentConfig, args.config, _overrides(args, ExperimentConfig))


def _job_config(cls: type[T], args: argparse.Namespace, flags: Sequence[str]) -> T:
    """A job's settings (adapt, distill): the preset, then the ``flags`` given on the command line
    (each named as the config key it sets), then the command's own ``key=value`` overrides, which
    win."""
    given = [f"{f}={getattr(args, f)}" for f in flags if getattr(args, f, None) is not None]
    return load_config(cls, args.config, [*given, *args.overrides])


def _run_job(run: Callable[[T], dict[str, Any]], cfg: T, keys: Sequence[str]) -> dict[str, Any]:
    """Runs a job on ``cfg`` and prints the ``keys`` of its summary as JSON; returns the summary."""
    summary = run(cfg)
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    return summary


def _models_line(what: str, summary: dict[str, Any]) -> str:
    """The flags that pick a job's resulting Labeler and Filter, to paste into the next command."""
    return f"{what}: --labeler {summary['labeler']} --filter {summary['filter']}"


def _overrides(args: argparse.Namespace, cls: type) -> list[str]:
    """The flags as ``key=value`` overrides, then the command's own ``key=value`` overrides (which
    win). The data flags win over the preset's data section (:mod:`efficientrag.data_flags`), and
    a user's own file gets its own work folder unless one is named."""
    from efficientrag.data_flags import DataFlags, data_flag_overrides
    from efficientrag.eval.prepared_data import default_work_dir

    flags = DataFlags(*(getattr(args, name, None) for name in ("dataset", "data", "corpus")))
    own = list(args.overrides)
    preset = load_config(cls, args.config, own).data
    needs_questions = getattr(args, "handler", None) in (cmd_eval, cmd_quickstart)
    overrides = data_flag_overrides(flags, preset, needs_questions=needs_questions)
    named_work_dir = getattr(args, "work_dir", None) is not None or any(
        o.split("=", 1)[0].strip() == "work_dir" for o in own
    )
    if (flags.corpus or flags.data) and not named_work_dir:
        # Never the preset's folder (it holds the preset's data and index) nor another file's.
        overrides.insert(0, f"work_dir={default_work_dir(flags.corpus or flags.data)}")
    return [*overrides, *flag_overrides(args, skip=("dataset", "data", "corpus")), *own]
