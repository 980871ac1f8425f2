"""The transfer presets train exactly what the leave-one-out benchmark trained (same training files,
synthesis settings and MiniLM recipes) and carry the setting it chose on the training files'
validation questions, so `efficientrag quickstart -c configs/quickstart/transfer-<dataset>.yaml`
reproduces a row of the README's transfer table."""

import dataclasses
import json
from pathlib import Path

import pytest

from efficientrag.config import load_config, parse_override
from efficientrag.quickstart.job import QuickstartConfig
from efficientrag.training.config import load_train_config

REPO = Path(__file__).resolve().parents[1]
TARGETS = {
    "hotpotqa": ("2wikimultihopqa", "musique"),
    "2wikimultihopqa": ("hotpotqa", "musique"),
    "musique": ("hotpotqa", "2wikimultihopqa"),
}
NOT_RECIPE = {"model", "data_dir", "output_dir"}


def _preset(target: str) -> QuickstartConfig:
    return load_config(QuickstartConfig, REPO / "configs" / "quickstart" / f"transfer-{target}.yaml")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_transfer_preset_trains_on_the_other_train_files_only(target):
    cfg = _preset(target)
    assert cfg.data.dataset == target and "dev" in Path(cfg.data.path).name
    assert tuple(d.dataset for d in cfg.train_sets) == TARGETS[target]
    assert all("train" in Path(d.path).name for d in cfg.train_sets)
    assert cfg.retriever.kind == "bm25" and cfg.synth.validation_ratio == 0.25


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("model", ["labeler", "filter"])
def test_transfer_preset_models_follow_the_minilm_cpu_recipe(target, model):
    recipe = load_train_config(model, REPO / "configs" / model / "minilm-cpu.yaml", [])
    if model == "labeler":
        recipe = dataclasses.replace(recipe, epochs=3)  # the benchmark's --epochs default
    got = getattr(_preset(target), model)
    for f in dataclasses.fields(recipe):
        if f.name not in NOT_RECIPE:
            assert getattr(got, f.name) == getattr(recipe, f.name), f.name


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_transfer_preset_holds_the_setting_the_benchmark_chose(target):
    """When this machine has the leave-one-out results, the preset must match them (skip otherwise)."""
    trained = "+".join(TARGETS[target])
    results = REPO / "runs" / "bench_protocol" / "bm25" / "models" / trained / f"results-{target}.json"
    if not results.is_file():
        pytest.skip(f"no finished leave-one-out run for {target} here")
    _, overrides = json.loads(results.read_text(encoding="utf-8"))["setting"]
    chosen = dict(parse_override(kv) for kv in overrides)
    cfg = _preset(target)
    assert {key: getattr(cfg.efficientrag, key) for key in chosen} == chosen
