"""Sampler, metrics, config and presets of the training package."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from efficientrag.errors import ConfigError
from efficientrag.training.config import TrainConfig, load_train_config
from efficientrag.training.metrics import BinaryCounts, selection_score
from efficientrag.training.sampler import LengthGroupedBatchSampler
from efficientrag.training.setup import resolve_mixed_precision

LENGTHS = np.random.default_rng(0).integers(10, 400, size=1000)


def test_sampler_order_depends_only_on_seed_and_epoch():
    a = LengthGroupedBatchSampler(LENGTHS, 32, seed=7)
    b = LengthGroupedBatchSampler(LENGTHS, 32, seed=7)
    a.set_epoch(3)
    b.set_epoch(3)
    assert a.batches() == b.batches()
    b.set_epoch(4)
    assert a.batches() != b.batches()
    assert (
        LengthGroupedBatchSampler(LENGTHS, 32, seed=8).batches()
        != LengthGroupedBatchSampler(LENGTHS, 32, seed=7).batches()
    )


@pytest.mark.parametrize("grouped", [True, False])
def test_every_row_appears_exactly_once_and_only_the_last_batch_is_short(grouped):
    sampler = LengthGroupedBatchSampler(LENGTHS, 32, seed=1, group_by_length=grouped)
    batches = sampler.batches()
    assert len(batches) == len(sampler) == 32
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert sum(len(b) != 32 for b in batches) == 1


def test_length_grouping_cuts_padding_and_puts_the_longest_batch_first():
    def padded(batches):
        return sum(len(b) * LENGTHS[b].max() for b in batches)

    grouped = LengthGroupedBatchSampler(LENGTHS, 32, seed=1).batches()
    plain = LengthGroupedBatchSampler(LENGTHS, 32, seed=1, group_by_length=False).batches()
    assert padded(grouped) < 0.7 * padded(plain)
    assert LENGTHS[grouped[0]].max() == LENGTHS.max()


def test_eval_sampler_is_sorted_and_unshuffled():
    batches = LengthGroupedBatchSampler(LENGTHS, 100, seed=0, shuffle=False).batches()
    flat = [i for b in batches for i in b]
    assert list(LENGTHS[flat]) == sorted(LENGTHS, reverse=True)


def test_binary_counts():
    counts = BinaryCounts()
    counts.add(torch.tensor([1, 1, 0, 0, 1]), torch.tensor([1, 0, 1, 0, 1]))
    assert (counts.tp, counts.fp, counts.fn, counts.tn) == (2, 1, 1, 1)
    assert counts.precision == pytest.approx(2 / 3) and counts.recall == pytest.approx(2 / 3)
    assert counts.f1 == pytest.approx(2 / 3) and counts.accuracy == pytest.approx(3 / 5)
    assert BinaryCounts().f1 == 0.0
    assert selection_score({"token_f1": 0.4, "tag_f1": 0.8}, "labeler") == pytest.approx(0.6)
    assert selection_score({"token_f1": 0.4}, "filter") == 0.4


@pytest.mark.parametrize("kind", ["labeler", "filter"])
@pytest.mark.parametrize("preset", ["deberta-v3-large", "minilm-cpu"])
def test_presets_load(kind, preset, repo_root):
    cfg = load_train_config(kind, repo_root / "configs" / kind / f"{preset}.yaml")
    assert cfg.model == kind and cfg.trackers == []
    if preset == "deberta-v3-large":
        assert cfg.backbone == "microsoft/deberta-v3-large"
        assert (cfg.learning_rate, cfg.max_length) == ((5e-6, 384) if kind == "labeler" else (1e-5, 256))
        assert (cfg.epochs, cfg.batch_size, cfg.warmup_steps, cfg.weight_decay) == (2, 32, 200, 0.01)
    else:
        assert cfg.backbone == "sentence-transformers/all-MiniLM-L6-v2" and cfg.max_length <= 256


def test_config_rejects_the_other_kind_and_bad_values(repo_root):
    with pytest.raises(ConfigError, match="trains a 'labeler'"):
        load_train_config("filter", repo_root / "configs" / "labeler" / "minilm-cpu.yaml")
    with pytest.raises(ConfigError, match="mixed_precision"):
        load_train_config("labeler", None, ["mixed_precision=fp8"])
    with pytest.raises(ConfigError, match="class_weights"):
        load_train_config("labeler", None, ["class_weights=[1.0]"])
    cfg = load_train_config("labeler", None, ["class_weights=[0.5, 25.3]", "trackers=[wandb]"])
    assert cfg.class_weights == [0.5, 25.3] and cfg.trackers == ["wandb"] and cfg.wandb_mode == "offline"
    assert load_train_config("labeler", None, ["class_weights=auto"]).class_weights == "auto"


def test_mixed_precision_auto_is_off_on_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_mixed_precision("auto") == "no"
    assert resolve_mixed_precision("bf16") == "bf16"
    assert TrainConfig().mixed_precision == "auto"


def test_trackers_missing_packages_are_skipped_and_unknown_names_refused(monkeypatch, caplog):
    import importlib.util

    from efficientrag.training import trackers

    real = importlib.util.find_spec
    monkeypatch.setattr(
        trackers.importlib.util, "find_spec", lambda name: None if name == "wandb" else real(name)
    )
    with caplog.at_level("WARNING"):
        assert trackers.available_trackers(["wandb"]) == []
    assert "not installed" in caplog.text
    with pytest.raises(ValueError, match="unknown tracker"):
        trackers.available_trackers(["carrier-pigeon"])


def test_a_tracker_that_fails_to_start_is_dropped(tmp_path):
    from efficientrag.training.trackers import start_trackers

    class Broken:
        trackers = ["half-started"]

        def init_trackers(self, *args, **kwargs):
            raise OSError("no network")

    acc = Broken()
    start_trackers(
        acc, ["wandb"], project="p", run_name="", wandb_mode="offline", output_dir=tmp_path, config={"a": [1]}
    )
    assert acc.trackers == []


def test_a_resumed_run_names_its_data_folder_any_way_but_not_another_folder(tmp_path, monkeypatch):
    from dataclasses import replace

    from efficientrag.config import save_config
    from efficientrag.errors import ConfigError
    from efficientrag.models.card import TRAIN_CONFIG_FILE
    from efficientrag.training.checkpoint import resume_point
    from efficientrag.training.config import TrainConfig

    for name in ("data", "other"):
        (tmp_path / name).mkdir()
    out, previous = tmp_path / "run", tmp_path / "run" / "checkpoints" / "last"
    out.mkdir()
    cfg = TrainConfig(model="labeler", data_dir=str(tmp_path / "data"))
    save_config(cfg, out / TRAIN_CONFIG_FILE)
    monkeypatch.chdir(tmp_path)
    # The same folder, relative to the working directory: the run continues.
    same = replace(cfg, data_dir="data")
    assert resume_point(previous, same, out, True, keys=["data_dir"], decides="the data") == previous
    with pytest.raises(ConfigError, match=r"data_dir: .*/data' -> 'other' changed since it started"):
        resume_point(previous, replace(cfg, data_dir="other"), out, True, keys=["data_dir"], decides="x")
