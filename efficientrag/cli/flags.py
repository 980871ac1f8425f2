"""The command line's shorthand flags: declared once, added to a command's parser, turned into overrides.

``--work-dir X`` is the override ``work_dir=X``: each flag names the config key it sets. The parser
(:mod:`efficientrag.cli.parser`) adds the flags a command takes, and
:mod:`efficientrag.cli.command_config` turns the given ones into ``key=value`` overrides, so the
two never disagree on what a flag means.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    key: str  # the config key the flag is a shorthand for
    help: str
    type: type = str


# Every shorthand flag of every command, once: ``--work-dir X`` is ``work_dir=X``. A command adds
# the ones it takes (``add_config_args``); ``flag_overrides`` turns the given ones into overrides.
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


def flag_overrides(args: argparse.Namespace, skip: Sequence[str] = ()) -> list[str]:
    """The shorthand flags given on the command line, as ``key=value`` overrides.

    Args:
        args: The parsed command line.
        skip: Flags to leave out (those turned into overrides elsewhere).

    Returns:
        One override per given flag, in :data:`FLAGS` order.
    """
    return [
        f"{flag.key}={getattr(args, name)}"
        for name, flag in FLAGS.items()
        if name not in skip and getattr(args, name, None) is not None
    ]


def add_config_args(p: argparse.ArgumentParser, preset: str, flags: Sequence[str] = DATA_FLAGS) -> None:
    """``--config``, the shorthand ``flags`` (names in :data:`FLAGS`) and trailing ``key=value``.

    Args:
        p: The command's parser.
        preset: An example preset, shown in ``--config``'s help.
        flags: The flags the command takes.
    """
    p.add_argument("--config", "-c", help=f"preset (YAML), e.g. {preset}")
    for name in flags:
        flag = FLAGS[name]
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=flag.type, help=flag.help)
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
