"""``efficientrag <command>``: parse a config, call the library, print what a person needs to see.

Every command takes ``--config PRESET.yaml`` and trailing ``key=value`` overrides; the named flags
(``--dataset``, ``--data``, ``--work-dir`` ...) are shorthands for overrides. The scripts under
``synth/``, ``train/`` and ``eval/`` run the same entries (``_delegate``, ``command_main``).

This module is the entry: it parses, runs one command and turns expected failures into exit
statuses. The flags are declared in :mod:`efficientrag.cli.flags`, the parser is built in
:mod:`efficientrag.cli.parser`, a command's config is assembled in
:mod:`efficientrag.cli.command_config` and each command family is a module of its own
(``corpus``, ``evaluate``, ``retrieve``, ``serve``, ``quickstart``, ``jobs``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from efficientrag.cli.parser import STANDALONE, add_verbose, build_parser
from efficientrag.config import parse_args_with_overrides
from efficientrag.errors import ConfigError, InvalidArgumentError
from efficientrag.eval.interrupts import RunInterrupted, report_interrupt
from efficientrag.retrieval.errors import BackendUnavailableError
from efficientrag.run_lock import FolderLockedError

log = logging.getLogger("efficientrag")


# Commands whose own entry (shared with a script under synth/ or train/) parses the arguments.
_DELEGATED = ("synth", "train")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``efficientrag`` console script: run one command and turn expected failures into a
    one-line message and an exit status instead of a traceback.

    Args:
        argv: The arguments after the program name (None: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for bad input or config, 75 when another process holds
        the folder, 128 + the signal number when interrupted (130 for Ctrl-C), or the command's own status.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    delegated = _delegate(argv)
    if delegated is not None:
        return delegated
    return _run(build_parser(), argv)


def command_main(command: str, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """``efficientrag COMMAND ...`` as a program of its own, with the same options and behaviour:
    the entry of the thin scripts under ``eval/`` (``eval/run.py`` is ``command_main("eval")``).

    Args:
        command: A command that also runs on its own (``eval``, ``report``).
        argv: The arguments after the program name (None: ``sys.argv[1:]``).
        prog: The program name its usage line shows (None: ``efficientrag COMMAND``).

    Returns:
        The exit status, as :func:`main` returns it.
    """
    if command not in STANDALONE:
        raise InvalidArgumentError(
            f"no standalone entry for command {command!r}; known: {sorted(STANDALONE)}"
        )
    help_text, add_args = STANDALONE[command]
    parser = argparse.ArgumentParser(prog=prog or f"efficientrag {command}", description=help_text)
    add_verbose(parser)
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
    except RunInterrupted as exc:
        # An evaluation stopped on a signal (eval, quickstart, adapt): what is done is kept.
        return report_interrupt(exc)
    except KeyboardInterrupt:
        # Outside an evaluation loop (reading data, building an index): index builds resume.
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


def _delegate(argv: list[str]) -> int | None:
    """``efficientrag synth|train ...`` run the same entry as ``synth/run.py`` / ``train/*.py``
    (``train reranker``: ``train/reranker.py``, the cross-encoder of the ``rerank`` method;
    ``train exit-head``: the Labeler's early-exit head, :mod:`efficientrag.cli.exit_head`)."""
    if not argv or argv[0] not in _DELEGATED:
        return None
    if argv[0] == "synth":
        from efficientrag.cli.synth import main as synth_main

        return synth_main(argv[1:], prog="efficientrag synth")
    from efficientrag.models.inputs import KINDS

    if len(argv) >= 2 and argv[1] == "exit-head":
        from efficientrag.cli.exit_head import main as exit_head_main

        return exit_head_main(argv[2:])
    if len(argv) >= 2 and argv[1] == "reranker":
        from efficientrag.cli.train_reranker import main as reranker_main

        return reranker_main(argv[2:], prog="efficientrag train reranker")
    from efficientrag.cli.train import main as train_main

    if len(argv) < 2 or argv[1] not in KINDS:
        print(
            "usage: efficientrag train {labeler,filter,reranker,exit-head} --config PRESET.yaml [--resume] "
            "[key=value ...]"
        )
        return 2
    try:
        return train_main(argv[1], argv[2:])
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


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
