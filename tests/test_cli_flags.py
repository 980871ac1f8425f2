"""The CLI's shorthand flags come from one table: each sets the config key it names, in every
command that takes it."""

import pytest

from efficientrag.cli.command_config import experiment_config
from efficientrag.cli.flags import FLAGS
from efficientrag.cli.parser import build_parser
from efficientrag.config import parse_args_with_overrides

GIVEN = {
    "dataset": "jsonl",
    "data": "questions.jsonl",
    "corpus": "chunks.jsonl",
    "work_dir": "runs/x",
    "method": "direct_r",
    "limit": "3",
    "labeler": "models/labeler",
    "filter": "models/filter",
    "treehop": "models/treehop",
}


def _value(cfg, dotted):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def test_every_flag_sets_its_key():
    assert set(GIVEN) == set(FLAGS)
    argv = ["eval"] + [a for name, v in GIVEN.items() for a in (f"--{name.replace('_', '-')}", v)]
    cfg = experiment_config(parse_args_with_overrides(build_parser(), argv))
    for name, flag in FLAGS.items():
        assert _value(cfg, flag.key) == flag.type(GIVEN[name]), name


@pytest.mark.parametrize(
    ("command", "takes"),
    [
        ("corpus", {"dataset", "data", "corpus", "work_dir"}),
        ("retrieve", {"dataset", "data", "corpus", "work_dir", "labeler", "filter"}),
        ("quickstart", {"dataset", "data", "corpus", "work_dir"}),
    ],
)
def test_commands_take_the_flags_of_their_config(command, takes):
    extra = ["-q", "why?"] if command == "retrieve" else []
    args = parse_args_with_overrides(build_parser(), [command, *extra])
    assert {name for name in FLAGS if hasattr(args, name)} == takes
