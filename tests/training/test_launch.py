"""``accelerate launch train/labeler.py`` as a real subprocess on CPU, killed and resumed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from efficientrag.cli.train import main
from efficientrag.testing.kill_mid_run import kill_when
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows


def _accelerate() -> str:
    exe = Path(sys.executable).with_name("accelerate")
    if exe.is_file():
        return str(exe)
    found = shutil.which("accelerate")
    if found is None:
        pytest.skip("the accelerate CLI is not installed")
    return found


def _state(out: Path) -> dict | None:
    path = out / "checkpoints" / "last" / "trainer_state.json"
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.numerics
def test_accelerate_launch_killed_mid_run_resumes_with_the_same_batches(tmp_path, repo_root):
    backbone = tiny_deberta(tmp_path / "deberta", sentences(300))
    data = write_rows(tmp_path / "data", labeler_rows(64, seed=1), labeler_rows(16, seed=2, prefix="v"))
    settings = {
        "model": "labeler",
        "backbone": str(backbone),
        "data_dir": str(data),
        "learning_rate": 0.003,
        "max_steps": 400,  # far more than the run will get to before it is killed
        "batch_size": 8,
        "max_length": 48,
        "warmup_steps": 2,
        "eval_steps": 0,
        "save_steps": 1,
        "mixed_precision": "no",
    }
    config = tmp_path / "labeler.yaml"
    config.write_text(yaml.safe_dump(settings))
    out = tmp_path / "killed"
    cmd = [
        _accelerate(),
        "launch",
        "--cpu",
        "--num_processes",
        "1",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(repo_root / "train" / "labeler.py"),
        "--config",
        str(config),
        f"output_dir={out}",
    ]

    def step() -> int:
        state = _state(out)
        return state["global_step"] if state else -1

    killed_at, output = kill_when(cmd, repo_root, step, at=3, timeout=240)
    assert killed_at is not None, f"the launched run never wrote a checkpoint:\n{output[-3000:]}"
    assert not (out / "final_metrics.json").exists()

    checkpoint_step = _state(out)["global_step"]  # the kill may land after one more save
    stop = checkpoint_step + 3
    assert (
        main(
            "labeler", ["--config", str(config), f"output_dir={out}", f"stop_after_steps={stop}", "--resume"]
        )
        == 0
    )
    ref = tmp_path / "reference"
    assert main("labeler", ["--config", str(config), f"output_dir={ref}", f"stop_after_steps={stop}"]) == 0

    resumed, reference = _log(out), _log(ref)
    assert [r["step"] for r in resumed] == list(range(1, stop + 1))
    assert [r["batch_hash"] for r in resumed] == [r["batch_hash"] for r in reference]
    assert [r["loss"] for r in resumed] == pytest.approx([r["loss"] for r in reference], rel=1e-4, abs=1e-5)
    assert _state(out)["global_step"] == _state(ref)["global_step"] == stop
    wa = load_file(out / "checkpoints" / "last" / "model.safetensors")
    wb = load_file(ref / "checkpoints" / "last" / "model.safetensors")
    assert max(float((wa[k] - wb[k]).abs().max()) for k in wa) < 1e-4


def test_plain_accelerate_launch_trains_on_every_core(tmp_path, repo_root):
    """The README's command, with none of accelerate's CPU flags: accelerate exports
    OMP_NUM_THREADS=1, and the entry script must still train on all the cores it may use."""
    from efficientrag.cpu import available_cores

    backbone = tiny_deberta(tmp_path / "deberta", sentences(100))
    data = write_rows(tmp_path / "data", labeler_rows(8, seed=1), labeler_rows(4, seed=2, prefix="v"))
    settings = {
        "model": "labeler",
        "backbone": str(backbone),
        "data_dir": str(data),
        "max_steps": 1,
        "batch_size": 8,
        "max_length": 32,
        "warmup_steps": 0,
        "eval_steps": 0,
        "mixed_precision": "no",
    }
    config = tmp_path / "labeler.yaml"
    config.write_text(yaml.safe_dump(settings))
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    cmd = [_accelerate(), "launch", str(repo_root / "train" / "labeler.py"), "-c", str(config)]
    cmd.append(f"output_dir={tmp_path / 'out'}")
    proc = subprocess.run(cmd, cwd=repo_root, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"cpu threads: {available_cores()}" in proc.stderr
