"""The BM25 presets carry exactly the setting the honest-protocol benchmark chose on validation
questions (README: `k10-t0.05-f3-tok0.7`: the grid's `k10-t0.05-f3`, then token threshold 0.7 from
the benchmark's token stage), so a user who copies the preset runs what the table reports."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from efficientrag.config import load_config, parse_override
from efficientrag.experiment.config import ExperimentConfig

REPO = Path(__file__).resolve().parents[1]
CHOSEN = "k10-t0.05-f3"
# What the benchmark's second stage (TOKEN_THRESHOLDS) chose for the grid's winner.
CHOSEN_TOKEN_THRESHOLD = 0.7


def _benchmark():
    spec = importlib.util.spec_from_file_location(
        "bench_protocol", REPO / "benchmarks" / "retrieval_efficientrag.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _grid_setting(label: str) -> dict:
    bench = _benchmark()
    entries = dict(bench._parse_setting(text) for text in bench.GRID)
    return dict(parse_override(kv) for kv in entries[label])


@pytest.mark.parametrize("dataset", ["hotpotqa", "2wikimultihopqa", "musique"])
def test_bm25_presets_hold_the_setting_chosen_on_validation(dataset):
    cfg = load_config(ExperimentConfig, REPO / "configs" / "experiments" / f"{dataset}-bm25.yaml")
    assert cfg.data.dataset == dataset and cfg.work_dir == f"runs/{dataset}-bm25"
    assert cfg.retriever.kind == "bm25"
    chosen = _grid_setting(CHOSEN)
    assert chosen, "the benchmark's grid no longer has the chosen setting"
    assert CHOSEN_TOKEN_THRESHOLD in _benchmark().TOKEN_THRESHOLDS
    chosen["token_threshold"] = CHOSEN_TOKEN_THRESHOLD
    got = {key: getattr(cfg.efficientrag, key) for key in chosen}
    assert got == chosen


def test_the_chosen_label_is_what_a_finished_protocol_run_wrote(tmp_path):
    """When this machine has the benchmark's results, the preset must match them (skip otherwise)."""
    # The models trained on all three train files (the leave-one-out runs sit beside them).
    pooled = "hotpotqa+2wikimultihopqa+musique"
    results = REPO / "runs" / "bench_protocol" / "bm25" / "models" / pooled / f"results-{pooled}.json"
    if not results.is_file():
        pytest.skip("no finished `benchmarks/retrieval_efficientrag.py --retriever bm25` run here")
    label, overrides = json.loads(results.read_text(encoding="utf-8"))["setting"]
    chosen = dict(parse_override(kv) for kv in overrides)
    cfg = load_config(ExperimentConfig, REPO / "configs" / "efficientrag" / "bm25-chosen.yaml")
    assert {key: getattr(cfg.efficientrag, key) for key in chosen} == chosen


def test_a_diagnostic_changes_exactly_one_lever_of_the_chosen_setting():
    bench = _benchmark()
    chosen = ["query_mode=branch", "top_k=10", "floor_k=3"]
    assert bench.with_lever(chosen, "floor_k=5") == ["query_mode=branch", "top_k=10", "floor_k=5"]
    assert bench.with_lever(chosen, "fill_budget=true") == [*chosen, "fill_budget=true"]
    # A key that is a prefix of another (top_k vs top_k_next) must not remove the other.
    assert bench.with_lever(["top_k=10", "top_kx=2"], "top_k=6") == ["top_kx=2", "top_k=6"]
    assert (
        bench.diagnostic_label("k10-t0.05-f3-tok0.7", "fill_budget=true")
        == "k10-t0.05-f3-tok0.7+fill_budgettrue"
    )
