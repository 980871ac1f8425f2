from dataclasses import dataclass, field
from typing import Literal

import pytest

from efficientrag.config import load_config, parse_override
from efficientrag.config_values import fingerprinted, to_dict
from efficientrag.errors import ConfigError, InvalidArgumentError
from efficientrag.setting_fields import SettingError, bounded, check_settings, probability, schema_bounds


@dataclass
class Inner:
    k: int = 10
    name: str = "bm25"
    kind: Literal["dense", "bm25"] = "dense"


@dataclass
class Outer:
    inner: Inner = field(default_factory=Inner)
    ks: list[int] = field(default_factory=lambda: [2, 4])
    rate: float = 0.5
    flag: bool = False
    path: str | None = None


def test_yaml_then_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("inner:\n  k: 5\nks: [1, 2, 3]\nrate: 1\n")
    cfg = load_config(Outer, p, ["inner.name=dense", "flag=true", "ks=[7]", "path=null"])
    assert cfg.inner.k == 5 and cfg.inner.name == "dense"
    assert cfg.ks == [7] and cfg.flag is True and cfg.rate == 1.0 and cfg.path is None


def test_unknown_key_names_key_and_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("inner:\n  nmae: x\n")
    with pytest.raises(ConfigError) as err:
        load_config(Outer, p)
    msg = str(err.value)
    assert "inner.nmae" in msg and str(p) in msg and "did you mean 'inner.name'" in msg


def test_unknown_override_key():
    with pytest.raises(ConfigError, match="unknown config key 'nope'"):
        load_config(Outer, None, ["nope=1"])


def test_type_errors_are_specific():
    with pytest.raises(ConfigError, match="'inner.k' must be an integer"):
        load_config(Outer, None, ["inner.k=ten"])
    with pytest.raises(ConfigError, match="'inner.kind' must be one of"):
        load_config(Outer, None, ["inner.kind=sparse"])
    with pytest.raises(ConfigError, match="'flag' must be true/false"):
        load_config(Outer, None, ["flag=maybe"])


def test_base_include(tmp_path):
    (tmp_path / "base.yaml").write_text("inner:\n  k: 3\n  name: x\nrate: 0.1\n")
    (tmp_path / "child.yaml").write_text("_base_: base.yaml\ninner:\n  k: 4\n")
    cfg = load_config(Outer, tmp_path / "child.yaml")
    assert (cfg.inner.k, cfg.inner.name, cfg.rate) == (4, "x", 0.1)


def test_override_parsing_and_roundtrip():
    assert parse_override("a.b=[1, 2]") == ("a.b", [1, 2])
    assert parse_override("x=hello world") == ("x", "hello world")
    with pytest.raises(ConfigError):
        parse_override("novalue")
    cfg = load_config(Outer, None, ["inner.k=2"])
    assert load_config(Outer, data=to_dict(cfg)) == cfg


@dataclass
class WithSecret:
    model: str = "m"
    api_key: str | None = field(default=None, repr=False, metadata={"secret": True})


def test_secret_fields_are_never_saved(tmp_path):
    from efficientrag.config import save_config

    cfg = load_config(WithSecret, None, ["api_key=sk-very-secret"])
    assert cfg.api_key == "sk-very-secret"
    assert "api_key" not in to_dict(cfg)
    save_config(cfg, tmp_path / "c.yaml")
    assert "sk-very-secret" not in (tmp_path / "c.yaml").read_text()


@dataclass
class Tuned:
    """A nested field whose factory differs from the nested class's own defaults."""

    inner: Inner = field(default_factory=lambda: Inner(k=99, name="tuned"))


def test_a_partial_nested_mapping_extends_the_fields_own_default(tmp_path):
    cfg = load_config(Tuned, None, ["inner.kind=bm25"])
    assert (cfg.inner.k, cfg.inner.name, cfg.inner.kind) == (99, "tuned", "bm25")
    p = tmp_path / "c.yaml"
    p.write_text("inner:\n  k: 5\n")
    cfg = load_config(Tuned, p)
    assert (cfg.inner.k, cfg.inner.name) == (5, "tuned")
    assert load_config(Tuned).inner.k == 99


def test_a_section_extends_another_preset_through_its_own_base(tmp_path):
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "inner.yaml").write_text("k: 3\nname: x\n")
    (tmp_path / "run.yaml").write_text("rate: 0.2\ninner:\n  _base_: presets/inner.yaml\n  k: 4\n")
    cfg = load_config(Outer, tmp_path / "run.yaml")
    assert (cfg.inner.k, cfg.inner.name, cfg.rate) == (4, "x", 0.2)
    # A file extending that one keeps the section's base and adds to it.
    (tmp_path / "child.yaml").write_text("_base_: run.yaml\ninner:\n  kind: bm25\n")
    cfg = load_config(Outer, tmp_path / "child.yaml", ["inner.k=5"])
    assert (cfg.inner.k, cfg.inner.name, cfg.inner.kind, cfg.rate) == (5, "x", "bm25", 0.2)


def test_a_section_base_that_includes_itself_is_a_cycle(tmp_path):
    (tmp_path / "loop.yaml").write_text("inner:\n  _base_: loop.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(Outer, tmp_path / "loop.yaml")


@dataclass
class Checked:
    limit: int = 1

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"limit must be >= 1, got {self.limit}")


@dataclass
class WithChecked:
    checked: Checked = field(default_factory=Checked)
    top: int = 0

    def __post_init__(self) -> None:
        if self.top < 0:
            raise ValueError(f"top must be >= 0, got {self.top}")


def test_an_invalid_section_is_named_without_a_trailing_dot():
    """Issue 48: a section's error read "invalid config for 'efficientrag.'"."""
    with pytest.raises(ConfigError) as err:
        load_config(WithChecked, None, ["checked.limit=0"])
    assert str(err.value) == (
        "<defaults> + overrides: invalid config section 'checked': limit must be >= 1, got 0"
    )
    with pytest.raises(ConfigError) as err:  # the top level has no section name: its class
        load_config(WithChecked, None, ["top=-1"])
    assert str(err.value) == "<defaults> + overrides: invalid config (WithChecked): top must be >= 0, got -1"


def test_a_check_only_switch_is_saved_but_left_out_of_fingerprints():
    from efficientrag.config_values import CHECK_ONLY

    @dataclass
    class Switched:
        k: int = 3
        lenient: bool = field(default=False, metadata={CHECK_ONLY: True})

    cfg = Switched(lenient=True)
    assert to_dict(cfg) == {"k": 3, "lenient": True}
    assert to_dict(cfg, checks=False) == {"k": 3}
    # The real one: a run's fingerprint stays the one an earlier version recorded.
    from efficientrag.retrieval.config import RetrieverConfig

    assert "foreign_collection" in to_dict(RetrieverConfig())["milvus"]
    assert "foreign_collection" not in to_dict(RetrieverConfig(), checks=False)["milvus"]


@dataclass
class _Ranged:
    count: int = bounded(1, low=1)
    share: float = bounded(0.5, above=0.0, below=1.0)
    fraction: float = probability(0.1)
    mode: Literal["a", "b"] = "a"
    limit: int | None = bounded(None, low=1, high=10)
    store: Literal["x", "y"] | None = None

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class _RangedChild(_Ranged):
    count: int = 3  # only the default changes: the base's range still holds


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"count": 0}, "count must be >= 1, got 0"),
        ({"share": 0.0}, "share must be > 0, got 0.0"),
        ({"share": 1.0}, "share must be < 1, got 1.0"),
        ({"fraction": 1.5}, "fraction=1.5: a probability, must be in [0, 1]"),
        ({"mode": "c"}, "mode must be one of ['a', 'b'], got 'c'"),
        ({"limit": 11}, "limit must lie in [1, 10], got 11"),
        ({"store": "z"}, "store must be one of ['x', 'y', None], got 'z'"),
    ],
)
def test_a_declared_range_or_choice_is_checked_at_the_field(kwargs, message):
    with pytest.raises(SettingError) as caught:
        _Ranged(**kwargs)
    assert str(caught.value) == message
    assert _Ranged(limit=None, share=0.99, fraction=1.0, store=None).limit is None
    assert _Ranged(store="y").store == "y"


def test_a_subclass_that_changes_a_default_keeps_the_range():
    assert _RangedChild().count == 3
    with pytest.raises(SettingError, match="^count must be >= 1, got 0$"):
        _RangedChild(count=0)


def test_the_loader_puts_the_section_in_front_of_a_range_error():
    from efficientrag.adapt.pseudo_rows import PseudoRowsConfig
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.serve.config import ServeExperimentConfig

    with pytest.raises(ConfigError, match=r": milvus.search_batch_size must lie in \[1, 16384\], got 20000$"):
        load_config(RetrieverConfig, overrides=["milvus.search_batch_size=20000"])
    with pytest.raises(ConfigError, match=r": serve.deadline_s must be > 0, got 0.0$"):
        load_config(ServeExperimentConfig, overrides=["serve.deadline_s=0"])
    with pytest.raises(ConfigError, match=r": retriever.hnsw_m must be >= 1, got 0$"):
        load_config(ServeExperimentConfig, overrides=["retriever.hnsw_m=0"])
    with pytest.raises(SettingError, match=r"^validation_ratio must be < 1, got 1.0$"):
        PseudoRowsConfig(validation_ratio=1.0)


def test_a_declared_range_becomes_json_schema_bounds():
    assert schema_bounds(_Ranged, "count") == {"minimum": 1}
    assert schema_bounds(_RangedChild, "count") == {"minimum": 1}
    assert schema_bounds(_Ranged, "share") == {"exclusiveMinimum": 0.0, "exclusiveMaximum": 1.0}
    assert schema_bounds(_Ranged, "fraction") == {"minimum": 0.0, "maximum": 1.0}
    assert schema_bounds(_Ranged, "limit") == {"minimum": 1, "maximum": 10}
    assert schema_bounds(_Ranged, "mode") == {}


@pytest.mark.parametrize(
    ("settings", "fields"),
    [
        ({"budget_policy": "rerank"}, ("budget_policy", "chunk_budget")),
        ({"chunk_budget": 1, "floor_k": 2}, ("chunk_budget", "floor_k")),
        ({"fill_budget": True}, ("fill_budget", "chunk_budget")),
        ({"fill_from": "labeled"}, ("fill_from", "fill_budget")),
        ({"rank_weight": 0.5}, ("rank_weight", "chunk_budget", "budget_policy", "fill_from")),
        ({"pair_budget": 3, "top_k": 5}, ("pair_budget", "top_k", "first_top_k")),
        (
            {"hop_calibration": [[1.0, 0.0]]},
            ("hop_calibration", "chunk_budget", "budget_policy", "fill_from"),
        ),
        ({"rank_weight": -1.0}, ("rank_weight",)),
        ({"pair_budget": 0}, ("pair_budget",)),
    ],
)
def test_every_loop_config_refusal_is_a_setting_error_naming_its_fields(settings, fields):
    """Range and cross-field checks alike: one error family, and the settings involved named
    structurally (the server points at the request's own setting from them)."""
    from efficientrag.pipeline.config import EfficientRAGConfig

    with pytest.raises(SettingError) as refused:
        EfficientRAGConfig(**settings)
    assert refused.value.fields == fields and isinstance(refused.value, ValueError)
    assert str(refused.value).startswith(fields[0])


def test_a_settings_roles_live_on_its_field_and_every_list_is_read_from_them():
    """A new setting declares its roles where it is declared; the lists that play one are read
    back in declaration order, whatever helper (range, probability, quiet) made the field."""
    from efficientrag.setting_fields import (
        ANSWER_ONLY,
        EXPOSED_OVER_HTTP,
        REPLAYABLE,
        quiet_at_default,
        setting,
        settings_with,
    )

    @dataclass
    class WithRoles:
        plain: str = setting("a", roles=[EXPOSED_OVER_HTTP])
        ranged: int = bounded(3, low=1, roles=[EXPOSED_OVER_HTTP, REPLAYABLE])
        chance: float = probability(0.5, roles=[REPLAYABLE])
        later: float = quiet_at_default(0.0, low=0.0, roles=[EXPOSED_OVER_HTTP])
        none: int = 1

        def __post_init__(self) -> None:
            check_settings(self)

    assert settings_with(WithRoles, EXPOSED_OVER_HTTP) == ("plain", "ranged", "later")
    assert settings_with(WithRoles, REPLAYABLE) == ("ranged", "chance")
    assert settings_with(WithRoles, ANSWER_ONLY) == ()
    with pytest.raises(SettingError, match="later must be >= 0"):
        WithRoles(later=-1.0)  # the role and the range compose
    assert fingerprinted(WithRoles()) == {"plain": "a", "ranged": 3, "chance": 0.5, "none": 1}
    with pytest.raises(InvalidArgumentError, match="unknown setting role"):
        setting(1, roles=["exposed"])
    with pytest.raises(InvalidArgumentError, match="unknown setting role"):
        settings_with(WithRoles, "speed")


def test_the_loops_derived_lists():
    from efficientrag.adapt.method_choice import rerank_settings
    from efficientrag.pipeline.budget import REPLAYABLE_SETTINGS
    from efficientrag.pipeline.config import ANSWER_SETTINGS, EfficientRAGConfig
    from efficientrag.setting_fields import RESET_FOR_RERANKER, settings_with

    assert ANSWER_SETTINGS == ("answer_top_k", "answer_max_new_tokens")
    assert set(REPLAYABLE_SETTINGS) == {"chunk_budget", "budget_policy", "fill_budget", "fill_from",
                                        "rank_weight", "hop_calibration"}  # fmt: skip
    loop = EfficientRAGConfig(floor_k=2, chunk_budget=6, budget_policy="best", fill_budget=True,
                              fill_from="labeled", rank_weight=0.5, pair_budget=40,
                              hop_calibration=[[1.0, 0.0]])  # fmt: skip
    contained = rerank_settings(loop, 7, 20)["loop_rerank"]
    fresh = EfficientRAGConfig()
    for name in settings_with(EfficientRAGConfig, RESET_FOR_RERANKER):
        assert getattr(contained, name) == getattr(fresh, name), name
    assert (contained.budget_policy, contained.chunk_budget, contained.first_top_k) == ("rerank", 7, 20)


def test_speed_only_settings_are_declared_on_their_fields_and_left_out_of_fingerprints():
    from dataclasses import fields, replace

    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.run_binding import SPEED_ONLY_SETTINGS, loop_fingerprint
    from efficientrag.llm.config import LLMConfig
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.setting_fields import SPEED_ONLY, config_classes, settings_with

    assert {"batch_size", "concurrency", "timeout", "prices"} <= SPEED_ONLY_SETTINGS
    assert "prices" in settings_with(LLMConfig, SPEED_ONLY) and "temperature" not in SPEED_ONLY_SETTINGS
    # Fingerprints drop these names wherever they appear, so every field of a run's config that
    # bears one of them must declare the role: no setting that decides results is dropped by name.
    for cls in config_classes(ExperimentConfig):
        for f in fields(cls):
            if f.name in SPEED_ONLY_SETTINGS:
                assert f.name in settings_with(cls, SPEED_ONLY), f"{cls.__name__}.{f.name}"
    base = EfficientRAGConfig()
    same = loop_fingerprint(replace(base, batch_size=7), answers=False)
    assert same == loop_fingerprint(base, answers=False)
    assert loop_fingerprint(replace(base, tag_threshold=0.4), answers=False) != same
