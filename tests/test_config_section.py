"""A command reads its preset's data section alone (``config_section``) and builds its config once."""

from dataclasses import dataclass, field

import pytest

import efficientrag.config as config_module
from efficientrag.cli.command_config import experiment_config
from efficientrag.cli.parser import build_parser
from efficientrag.config import parse_args_with_overrides
from efficientrag.config_values import config_section, from_dict
from efficientrag.errors import ConfigError
from efficientrag.experiment.config import ExperimentConfig


@dataclass
class Inner:
    size: int = 1
    name: str = "a"


@dataclass
class Outer:
    # The factory's default differs from Inner's: a section extends the field's default.
    inner: Inner = field(default_factory=lambda: Inner(size=400))
    other: int = 0


@pytest.mark.parametrize(
    "merged",
    [{}, {"inner": {"name": "b"}}, {"inner": {"size": 3}, "other": 9}, {"inner": {"size": 2, "name": "c"}}],
)
def test_a_section_is_what_the_whole_config_holds(merged):
    assert config_section(Outer, "inner", merged) == from_dict(Outer, merged).inner


def test_a_partial_section_extends_the_fields_default_not_the_class():
    assert config_section(Outer, "inner", {"inner": {"name": "b"}}) == Inner(size=400, name="b")


def test_a_bad_value_in_the_section_names_its_key():
    with pytest.raises(ConfigError, match=r"inner\.size"):
        config_section(Outer, "inner", {"inner": {"size": "many"}}, origin="preset.yaml")


def test_a_command_builds_its_experiment_config_once(monkeypatch):
    built = []
    real = config_module.from_dict

    def counting(cls, data, **kwargs):
        if not kwargs.get("prefix"):
            built.append(cls)
        return real(cls, data, **kwargs)

    monkeypatch.setattr(config_module, "from_dict", counting)
    argv = ["eval", "--dataset", "jsonl", "--data", "q.jsonl", "efficientrag.top_k=5"]
    cfg = experiment_config(parse_args_with_overrides(build_parser(), argv))
    assert cfg.efficientrag.top_k == 5
    assert built == [ExperimentConfig]
