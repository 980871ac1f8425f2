"""``efficientrag <command>``: parse a config, call the library, print what a person needs to see.

Every command takes ``--config PRESET.yaml`` and trailing ``key=value`` overrides; the named flags
(``--dataset``, ``--data``, ``--work-dir`` ...) are shorthands for overrides. The scripts under
``synth/``, ``train/`` and ``eval/`` run the same entries (``_delegate``, ``command_main``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from efficientrag.config import ConfigError, load_config, parse_args_with_overrides
from efficientrag.retrieval.errors import BackendUnavailableError
from efficientrag.run_lock import FolderLockedError

log = logging.getLogger("efficientrag")
T = TypeVar("T")


@dataclass(frozen=True)
class Flag:
    key: str  # the config key the flag is a shorthand for
    help: str
    type: type = str


# Every shorthand flag of every command, once: ``--work-dir X`` is ``work_dir=X``. A command adds
# the ones it takes (``_add_config_args``); ``_flag_overrides`` turns the given ones into overrides.
FLAGS = {
    "dataset": Flag("data.dataset", "hotpotqa | 2wikimultihopqa | musique | jsonl | toy (data.dataset)"),
    "data": Flag("data.path", "dataset file (data.path)"),
    "corpus": Flag("data.corpus_path", "corpus JSONL for --dataset jsonl (data.corpus_path)"),
    "work_dir": Flag("work_dir", "where data, index, models and results go (work_dir)"),
    "method": Flag("eval.method", "method name (eval.method)"),
    "limit": Flag("eval.limit", "evaluate the first N questions (eval.limit)", int),
    "labeler": Flag("efficientrag.labeler", "trained Labeler folder (efficientrag.labeler)"),
    "filter": Flag("efficientrag.filter", "trained Filter folder (efficientrag.filter)"),
    "treehop": Flag("treehop.model", "trained TreeHop folder (treehop.model), for --method treehop"),
}
DATA_FLAGS = ("dataset", "data", "corpus", "work_dir")
MODEL_FLAGS = ("labeler", "filter")


# Commands whose own entry (shared with a script under synth/ or train/) parses the arguments.
_DELEGATED = ("synth", "train")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``efficientrag`` console script: run one command and turn expected failures into a
    one-line message and an exit status instead of a traceback.

    Args:
        argv: The arguments after the program name (None: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for bad input or config, 75 when another process holds
        the folder, 130 when interrupted, or the command's own status.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    delegated = _delegate(argv)
    if delegated is not None:
        return delegated
    return _run(_build_parser(), argv)


def command_main(command: str, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """``efficientrag COMMAND ...`` as a program of its own, with the same options and behaviour:
    the entry of the thin scripts under ``eval/`` (``eval/run.py`` is ``command_main("eval")``)."""
    if command not in _STANDALONE:
        raise ValueError(f"no standalone entry for command {command!r}; known: {sorted(_STANDALONE)}")
    help_text, add_args = _STANDALONE[command]
    parser = argparse.ArgumentParser(prog=prog or f"efficientrag {command}", description=help_text)
    _add_verbose(parser)
    add_args(parser)
    return _run(parser, list(sys.argv[1:] if argv is None else argv))


def _run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parse_args_with_overrides(parser, argv)
    _setup_logging(args.verbose)
    try:
        return int(args.handler(args) or 0)
    except (ConfigError, FileNotFoundError, NotADirectoryError, ValueError, BackendUnavailableError) as exc:
        # Bad input is reported as one clear line, not a traceback.
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FolderLockedError as exc:
        # Another process is writing the same folder: one line naming it. 75 (EX_TEMPFAIL): the
        # same command succeeds once that process is done.
        print(f"error: {exc}", file=sys.stderr)
        return 75
    except KeyboardInterrupt:
        # Outside an evaluation loop (reading data, building an index): index builds resume.
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


# --------------------------------------------------------------------------- commands


def cmd_corpus(args: argparse.Namespace) -> int:
    """``efficientrag corpus``: read the dataset and write the pooled, de-duplicated corpus (and
    examples) to the experiment's data folder, so every later command reads one corpus.

    Args:
        args: the parsed command line (``--config``, the data flags, ``--rebuild``, overrides).

    Returns:
        0; bad input raises, which :func:`main` reports as one line and exit status 2.
    """
    from efficientrag.experiment import prepare_data

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
    from efficientrag.experiment import prepare_data
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
    from efficientrag.experiment import check_model_folders, prepare_data, search_backend
    from efficientrag.pipeline.efficientrag import EfficientRAG, check_questions
    from efficientrag.pipeline.trace import trace_to_dicts
    from efficientrag.pipeline.trace_format import format_result

    cfg = _experiment_config(args)
    check_questions([args.question], source="--question")
    check_model_folders(cfg, "efficientrag")
    # A Milvus collection is searched as it is: no dataset has to be read to ask it a question.
    corpus = None if cfg.retriever.kind == "milvus" else prepare_data(cfg).corpus
    retriever = search_backend(cfg, corpus)
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
            ``--port``, overrides; ``--host``/``--port`` win over both).

    Returns:
        The server's exit status (0 after a drained stop).
    """
    from efficientrag.serve.config import ServeExperimentConfig
    from efficientrag.serve.startup import serve

    # --host/--port given on the command line win over the preset and key=value.
    ports = [f"serve.{k}={getattr(args, k)}" for k in ("host", "port") if getattr(args, k) is not None]
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
    from efficientrag.quickstart import QuickstartConfig, run_quickstart

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


# --------------------------------------------------------------------------- plumbing


def _delegate(argv: list[str]) -> int | None:
    """``efficientrag synth|train ...`` run the same entry as ``synth/run.py`` / ``train/*.py``."""
    if not argv or argv[0] not in _DELEGATED:
        return None
    if argv[0] == "synth":
        from efficientrag.synth.script import main as synth_main

        return synth_main(argv[1:], prog="efficientrag synth")
    from efficientrag.models.inputs import KINDS
    from efficientrag.training.script import main as train_main

    if len(argv) < 2 or argv[1] not in KINDS:
        print("usage: efficientrag train {labeler,filter} --config PRESET.yaml [--resume] [key=value ...]")
        return 2
    try:
        return train_main(argv[1], argv[2:])
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _experiment_config(args: argparse.Namespace):
    from efficientrag.experiment import ExperimentConfig

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
    from efficientrag.experiment import default_work_dir

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
    return [*overrides, *_flag_overrides(args, skip=("dataset", "data", "corpus")), *own]


def _flag_overrides(args: argparse.Namespace, skip: Sequence[str] = ()) -> list[str]:
    return [
        f"{flag.key}={getattr(args, name)}"
        for name, flag in FLAGS.items()
        if name not in skip and getattr(args, name, None) is not None
    ]


def _add_config_args(p: argparse.ArgumentParser, preset: str, flags: Sequence[str] = DATA_FLAGS) -> None:
    """``--config``, the shorthand ``flags`` (names in :data:`FLAGS`) and trailing ``key=value``."""
    p.add_argument("--config", "-c", help=f"preset (YAML), e.g. {preset}")
    for name in flags:
        flag = FLAGS[name]
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=flag.type, help=flag.help)
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")


def _add_experiment_args(p: argparse.ArgumentParser, extra_flags: Sequence[str] = ()) -> None:
    _add_config_args(p, "configs/experiments/toy.yaml", (*DATA_FLAGS, *extra_flags))


def _add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")


_EVAL_HELP = "evaluate a method (direct_r, efficientrag, direct, cot, iter_retgen, flare, dragin, ...)"
_REPORT_HELP = "one Markdown report (tables + plots) over several eval run folders"


def _add_eval_args(p: argparse.ArgumentParser) -> None:
    _add_experiment_args(p, ("method", "limit", *MODEL_FLAGS, "treehop"))
    p.add_argument("--no-resume", action="store_true", help="start over instead of continuing")
    p.add_argument(
        "--wait",
        action="store_true",
        help="when another process is writing the run folder, wait for it instead of refusing "
        "(eval.wait_for_lock)",
    )
    p.set_defaults(handler=cmd_eval)


def _add_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "runs", nargs="+", help="run folders written by `efficientrag eval` (work_dir/eval/<name>)"
    )
    p.add_argument("--out", required=True, help="folder for report.md, report.json and the plots")
    p.add_argument("--title", default="efficientrag comparison")
    p.add_argument(
        "--qa-note", help="mark every QA number with this note (e.g. answers from a scripted server)"
    )
    p.set_defaults(handler=cmd_report)


# Commands that also run as scripts of their own (command_main): help text and argument setup.
_STANDALONE = {"eval": (_EVAL_HELP, _add_eval_args), "report": (_REPORT_HELP, _add_report_args)}


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="efficientrag", description=__doc__.splitlines()[0])
    _add_verbose(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("corpus", help="read a dataset and write the pooled, de-duplicated corpus")
    _add_experiment_args(p)
    p.add_argument("--rebuild", action="store_true", help="re-read the dataset even if already prepared")
    p.set_defaults(handler=cmd_corpus)

    p = sub.add_parser("index", help="build (or verify) the retrieval index over the corpus")
    _add_experiment_args(p)
    p.add_argument("--rebuild", action="store_true", help="rebuild even if a matching index exists")
    p.set_defaults(handler=cmd_index)

    _add_eval_args(sub.add_parser("eval", help=_EVAL_HELP))

    p = sub.add_parser("retrieve", help="run EfficientRAG on one question and print the hops")
    _add_experiment_args(p, MODEL_FLAGS)
    p.add_argument("--question", "-q", required=True)
    p.add_argument("--json", action="store_true", help="print the result and trace as JSON")
    p.set_defaults(handler=cmd_retrieve)

    p = sub.add_parser(
        "serve", help="serve EfficientRAG over HTTP (API, Search-R1 /retrieve, metrics, a page at /)"
    )
    _add_experiment_args(p, MODEL_FLAGS)
    p.add_argument("--host", help="address to listen on (serve.host; default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (serve.port; default 8000, 0: any free port)")
    p.set_defaults(handler=cmd_serve)

    # Listed for --help; the arguments are parsed by the commands' own entries (see _delegate).
    sub.add_parser("synth", help="synthesize Labeler/Filter training data (same as synth/run.py)")
    sub.add_parser(
        "train", help="train the labeler or the filter (same as train/labeler.py, train/filter.py)"
    )

    _add_report_args(sub.add_parser("report", help=_REPORT_HELP))

    p = sub.add_parser(
        "quickstart",
        help="toy world (or --dataset/--data) -> synthesis -> train Labeler+Filter -> EfficientRAG vs Direct-R",
    )
    _add_config_args(p, "configs/quickstart/hotpotqa.yaml")
    p.set_defaults(handler=cmd_quickstart)

    p = sub.add_parser(
        "adapt", help="fine-tune trained Labeler/Filter for a new corpus, without gold (resumable)"
    )
    p.add_argument("--config", "-c", help="adapt preset (YAML), e.g. configs/adapt/minilm-cpu.yaml")
    p.add_argument("--corpus", help="target corpus JSONL (corpus)")
    p.add_argument("--labeler", help="trained Labeler folder (labeler)")
    p.add_argument("--filter", help="trained Filter folder (filter)")
    p.add_argument("--train-data", dest="train_data", help="their training set folder (train_data)")
    p.add_argument("--questions", help="unlabeled questions for self-training (questions)")
    p.add_argument(
        "--validation",
        help="questions with gold ids in the corpus, to score the adapted models on (validation)",
    )
    p.add_argument("--work-dir", dest="work_dir", help="where everything goes (default runs/adapt)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.set_defaults(handler=cmd_adapt)

    p = sub.add_parser("distill", help="shallower Labeler/Filter students taught by trained ones (resumable)")
    p.add_argument("--config", "-c", help="distill preset (YAML), e.g. configs/distill/minilm-cpu.yaml")
    p.add_argument("--labeler", help="trained Labeler folder, the teacher (labeler)")
    p.add_argument("--filter", help="trained Filter folder, the teacher (filter)")
    p.add_argument("--train-data", dest="train_data", help="their training set folder (train_data)")
    p.add_argument("--questions", help="training questions the teachers' loop records pairs on (questions)")
    p.add_argument("--corpus", help="the corpus those questions are asked over (corpus)")
    p.add_argument("--depth", type=int, help="layers the students keep (depth)")
    p.add_argument("--work-dir", dest="work_dir", help="where everything goes (default runs/distill)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.set_defaults(handler=cmd_distill)
    return parser


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # One INFO line per HTTP request is noise in a run of thousands of LLM calls; Milvus Lite's
    # server start and stop lines are noise on every command that opens a Lite file.
    noisy_loggers = ("httpx", "httpx2", "openai", "urllib3", "filelock", "faiss.loader", "accelerate")
    noisy_loggers += ("milvus_lite",)
    for noisy in noisy_loggers:
        logging.getLogger(noisy).setLevel(logging.WARNING)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
