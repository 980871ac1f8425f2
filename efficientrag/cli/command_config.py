"""How a command's config is assembled: its preset, then its shorthand flags, then its own
``key=value`` overrides, which win; and the printing shared by the job commands.

Every command module builds its config through here, so a flag means the same in each.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from efficientrag.cli.flags import flag_overrides
from efficientrag.config import load_config, merged_sources
from efficientrag.config_values import config_section

T = TypeVar("T")


def experiment_config(args: argparse.Namespace):
    from efficientrag.experiment.config import ExperimentConfig

    return load_config(ExperimentConfig, args.config, command_overrides(args, ExperimentConfig))


def job_config(cls: type[T], args: argparse.Namespace, flags: Sequence[str]) -> T:
    """A job's settings (adapt, distill): the preset, then the ``flags`` given on the command line
    (each named as the config key it sets), then the command's own ``key=value`` overrides, which
    win."""
    given = [f"{f}={getattr(args, f)}" for f in flags if getattr(args, f, None) is not None]
    return load_config(cls, args.config, [*given, *args.overrides])


def run_job(run: Callable[[T], dict[str, Any]], cfg: T, keys: Sequence[str]) -> dict[str, Any]:
    """Runs a job on ``cfg`` and prints the ``keys`` of its summary as JSON; returns the summary."""
    summary = run(cfg)
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    return summary


def models_line(what: str, summary: dict[str, Any]) -> str:
    """The flags that pick a job's resulting Labeler and Filter, to paste into the next command."""
    return f"{what}: --labeler {summary['labeler']} --filter {summary['filter']}"


def command_overrides(args: argparse.Namespace, cls: type) -> list[str]:
    """The flags as ``key=value`` overrides, then the command's own ``key=value`` overrides (which
    win). The data flags win over the preset's data section (:mod:`efficientrag.cli.data_flags`), and
    a user's own file gets its own work folder unless one is named."""
    from efficientrag.cli.data_flags import DataFlags, data_flag_overrides
    from efficientrag.experiment.prepared_data import default_work_dir

    flags = DataFlags(*(getattr(args, name, None) for name in ("dataset", "data", "corpus")))
    own = list(args.overrides)
    # The preset's data section alone: the whole config is built once, by the caller.
    raw, origin = merged_sources(args.config, own)
    preset = config_section(cls, "data", raw, origin=origin)
    # eval and quickstart ask questions (the parser marks them): a corpus alone is not enough.
    needs_questions = getattr(args, "needs_questions", False)
    overrides = data_flag_overrides(flags, preset, needs_questions=needs_questions)
    named_work_dir = getattr(args, "work_dir", None) is not None or any(
        o.split("=", 1)[0].strip() == "work_dir" for o in own
    )
    if (flags.corpus or flags.data) and not named_work_dir:
        # Never the preset's folder (it holds the preset's data and index) nor another file's.
        overrides.insert(0, f"work_dir={default_work_dir(flags.corpus or flags.data)}")
    return [*overrides, *flag_overrides(args, skip=("dataset", "data", "corpus")), *own]
