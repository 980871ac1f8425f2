"""The ``efficientrag`` argument parser: each command's arguments and the function that runs it.

Kept apart from the commands (one module per command family in :mod:`efficientrag.cli`) so that
what a command accepts reads in one place; :mod:`efficientrag.cli.main` parses with it. The eval and report commands' arguments are
also the whole command line of their scripts under ``eval/`` (:data:`STANDALONE`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from efficientrag.cli.corpus import cmd_corpus, cmd_index
from efficientrag.cli.evaluate import cmd_eval, cmd_report
from efficientrag.cli.flags import DATA_FLAGS, MODEL_FLAGS, add_config_args
from efficientrag.cli.jobs import cmd_adapt, cmd_distill
from efficientrag.cli.quickstart import cmd_quickstart
from efficientrag.cli.retrieve import cmd_retrieve
from efficientrag.cli.serve import cmd_serve

# The program's description (the first line of the command line's docstring, as it always was).
DESCRIPTION = (
    "``efficientrag <command>``: parse a config, call the library, print what a person needs to see."
)


def _add_experiment_args(p: argparse.ArgumentParser, extra_flags: Sequence[str] = ()) -> None:
    add_config_args(p, "configs/experiments/toy.yaml", (*DATA_FLAGS, *extra_flags))


def add_verbose(p: argparse.ArgumentParser) -> None:
    """``-v``/``--verbose``, which every command takes.

    Args:
        p: The command's parser.
    """
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
    p.set_defaults(handler=cmd_eval, needs_questions=True)


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


def _add_adapt_args(p: argparse.ArgumentParser) -> None:
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


def _add_distill_args(p: argparse.ArgumentParser) -> None:
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


# Commands that also run as scripts of their own (command_main): help text and argument setup.
STANDALONE = {"eval": (_EVAL_HELP, _add_eval_args), "report": (_REPORT_HELP, _add_report_args)}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``efficientrag <command>``: each command's arguments, and its ``cmd_*`` function
    as ``handler``. ``synth`` and ``train`` are listed for ``--help`` only (their own entries parse).

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(prog="efficientrag", description=DESCRIPTION)
    add_verbose(parser)
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
    p.add_argument(
        "--workers",
        type=int,
        help="server processes sharing the port, each with its own loop (serve.workers)",
    )
    p.set_defaults(handler=cmd_serve)

    # Listed for --help; the arguments are parsed by the commands' own entries (efficientrag.cli.main._delegate).
    sub.add_parser("synth", help="synthesize Labeler/Filter training data (same as synth/run.py)")
    sub.add_parser(
        "train",
        help="train the labeler, the filter or the reranker (same as train/labeler.py, train/filter.py, "
        "train/reranker.py), or fit the labeler's early-exit head (train exit-head)",
    )

    _add_report_args(sub.add_parser("report", help=_REPORT_HELP))

    p = sub.add_parser(
        "quickstart",
        help="toy world (or --dataset/--data) -> synthesis -> train Labeler+Filter -> EfficientRAG vs Direct-R",
    )
    add_config_args(p, "configs/quickstart/hotpotqa.yaml")
    p.set_defaults(handler=cmd_quickstart, needs_questions=True)

    _add_adapt_args(
        sub.add_parser(
            "adapt", help="fine-tune trained Labeler/Filter for a new corpus, without gold (resumable)"
        )
    )
    _add_distill_args(
        sub.add_parser("distill", help="shallower Labeler/Filter students taught by trained ones (resumable)")
    )
    return parser
