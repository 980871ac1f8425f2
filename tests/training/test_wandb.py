"""``trackers=[wandb]``: a real offline W&B run (the installed ``wandb``, no network) holds the
training config, every logged loss and every evaluation, and ``WANDB_MODE`` in the environment
overrides the preset's ``wandb_mode``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

wandb = pytest.importorskip("wandb")

from efficientrag.testing.tiny_backbones import tiny_deberta  # noqa: E402
from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows  # noqa: E402
from efficientrag.testing.wandb_offline import find_offline_runs, read_offline_run  # noqa: E402
from efficientrag.training import TrainConfig, train  # noqa: E402


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[str, Path]:
    backbone = str(tiny_deberta(tmp_path_factory.mktemp("deberta"), sentences(300)))
    data = write_rows(
        tmp_path_factory.mktemp("lab"), labeler_rows(32, seed=1), labeler_rows(16, seed=2, prefix="v")
    )
    return backbone, data


@pytest.fixture()
def wandb_home(tmp_path, monkeypatch) -> Path:
    """Every folder W&B writes outside the run (settings, cache, artifacts) inside tmp_path."""
    home = tmp_path / "wandb_home"
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        path = home / var.lower()
        path.mkdir(parents=True)
        monkeypatch.setenv(var, str(path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    return home


def _cfg(setup: tuple[str, Path], out: Path, **kw) -> TrainConfig:
    backbone, data = setup
    settings = dict(
        model="labeler",
        backbone=backbone,
        data_dir=str(data),
        output_dir=str(out),
        learning_rate=3e-3,
        batch_size=8,
        max_length=48,
        warmup_steps=1,
        eval_steps=2,
        save_steps=0,
        logging_steps=1,
        mixed_precision="no",
        max_steps=4,
        trackers=["wandb"],
    )
    return TrainConfig(**{**settings, **kw})


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_offline_run_records_config_losses_and_evaluations(setup, tmp_path, wandb_home, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)  # the preset's wandb_mode (offline) decides
    out = tmp_path / "run"
    train(_cfg(setup, out, wandb_project="efficientrag-test", run_name="tiny-labeler"))
    wandb.teardown()  # finish() returns before the service has flushed the run file

    (run_dir,) = find_offline_runs(out / "wandb")  # under output_dir, one run, offline
    assert not list((out / "wandb").glob("run-*"))  # no online run folder
    run = read_offline_run(run_dir)
    assert run.project == "efficientrag-test" and run.name == "tiny-labeler"
    assert run_dir.name.endswith(run.run_id)
    assert {k: run.config[k] for k in ("model", "max_steps", "learning_rate", "batch_size")} == {
        "model": "labeler",
        "max_steps": 4,
        "learning_rate": 3e-3,
        "batch_size": 8,
    }
    assert run.config["output_dir"] == str(out) and run.config["wandb_mode"] == "offline"

    # Every step's losses and learning rate, exactly as the run's own train_log.jsonl has them.
    train_log = _jsonl(out / "train_log.jsonl")
    for key in ("loss", "token_loss", "tag_loss", "lr"):
        assert run.series(f"train/{key}") == [(r["step"], pytest.approx(r[key])) for r in train_log], key
    # Every evaluation, as in eval_log.jsonl.
    eval_log = _jsonl(out / "eval_log.jsonl")
    assert [e["step"] for e in eval_log] == [2, 4]
    for key in ("score", "token_f1", "tag_accuracy", "loss"):
        assert run.series(f"eval/{key}") == [(e["step"], pytest.approx(e[key])) for e in eval_log], key
    # The summary holds the last value of each metric.
    assert run.summary["train/loss"] == pytest.approx(train_log[-1]["loss"])
    assert run.summary["eval/score"] == pytest.approx(eval_log[-1]["score"])
    assert run.summary["_step"] == 4


def test_wandb_mode_in_the_environment_beats_the_preset(setup, tmp_path, wandb_home, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    out = tmp_path / "run"
    # The preset asks for an offline run, which wandb.init(mode=...) alone would write.
    metrics = train(_cfg(setup, out, wandb_mode="offline", max_steps=2))
    wandb.teardown()
    assert metrics["completed"] and metrics["global_step"] == 2
    assert find_offline_runs(out / "wandb") == [] and not list((out / "wandb").glob("run-*"))
    assert len(_jsonl(out / "train_log.jsonl")) == 2  # the run's own logs do not depend on trackers


def test_reader_refuses_what_is_not_a_run_file(tmp_path):
    run_dir = tmp_path / "offline-run-x"
    run_dir.mkdir()
    with pytest.raises(FileNotFoundError, match="run-\\*.wandb"):
        read_offline_run(run_dir)
    (run_dir / "run-x.wandb").write_bytes(b"not wandb")
    with pytest.raises(ValueError, match="not a W&B run file"):
        read_offline_run(run_dir)
    (run_dir / "run-x.wandb").write_bytes(b":W&B\xe1\xbe\x00")  # the header alone: not flushed yet
    with pytest.raises(ValueError, match="no exit record"):
        read_offline_run(run_dir)
