"""``python eval/run.py`` and ``python eval/report.py`` as real subprocesses: the same files as
``efficientrag eval`` / ``efficientrag report``, and the same errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from efficientrag.cli import command_main, main

# A small toy world with BM25: no encoder to load, so each run takes about a second.
EVAL_ARGS = ["--dataset", "toy", "--method", "direct_r", "--limit", "6", "data.toy.num_questions=20",
             "retriever.kind=bm25"]  # fmt: skip


def run_script(repo_root: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo_root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, str(repo_root / "eval" / script), *args],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def untimed(value: Any) -> Any:
    """The record without wall-clock measurements, the only fields two identical runs differ in."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if "time" not in k}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def read_run(run_dir: Path) -> dict[str, Any]:
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config.pop("work_dir")
    return {
        "config": config,
        "predictions": [untimed(json.loads(line)) for line in (run_dir / "predictions.jsonl").open()],
        "summary": untimed(json.loads((run_dir / "summary.json").read_text())),
        # The first table is retrieval quality; the second holds latencies.
        "table": (run_dir / "table.md").read_text().split("\n\n")[0],
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory, repo_root) -> tuple[Path, Path]:
    """The same evaluation through the script and through the CLI, in two work dirs."""
    script_dir, cli_dir = tmp_path_factory.mktemp("script"), tmp_path_factory.mktemp("cli")
    proc = run_script(repo_root, "run.py", *EVAL_ARGS, "--work-dir", str(script_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "direct_r@2 | toy | 6 |" in proc.stdout
    assert main(["eval", *EVAL_ARGS, "--work-dir", str(cli_dir)]) == 0
    return script_dir / "eval" / "direct_r", cli_dir / "eval" / "direct_r"


def test_eval_script_writes_what_the_cli_writes(runs):
    script_run, cli_run = runs
    script, cli = read_run(script_run), read_run(cli_run)
    assert len(script["predictions"]) == 6 and script["summary"]["n"] == 6
    assert (
        script["config"]["eval"]["method"] == "direct_r" and script["config"]["retriever"]["kind"] == "bm25"
    )
    assert script == cli


def test_report_script_writes_what_the_cli_writes(runs, repo_root, tmp_path):
    script_run, _ = runs
    proc = run_script(repo_root, "report.py", str(script_run), "--out", str(tmp_path / "s"), "--title", "T")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert main(["report", str(script_run), "--out", str(tmp_path / "c"), "--title", "T"]) == 0
    written = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert {"report.md", "report.json"} <= set(written)
    assert written == sorted(p.name for p in (tmp_path / "c").iterdir())
    for name in written:
        assert (tmp_path / "s" / name).read_bytes() == (tmp_path / "c" / name).read_bytes(), name
    report = (tmp_path / "s" / "report.md").read_text()
    assert report.startswith("# T") and "direct_r" in report and proc.stdout.startswith(report)


def test_scripts_report_bad_input_in_one_line(repo_root, tmp_path):
    proc = run_script(repo_root, "run.py", "--config", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2 and "missing.yaml" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_script(repo_root, "run.py", "--dataset", "toy", "no_such_key=1")
    assert proc.returncode == 2 and "no_such_key" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_script(repo_root, "report.py", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "nowhere" in proc.stderr
    proc = run_script(repo_root, "run.py", "--bogus")
    assert proc.returncode == 2 and "eval/run.py: error: unrecognized arguments: --bogus" in proc.stderr


def test_command_main_knows_only_the_standalone_commands():
    with pytest.raises(ValueError, match="'quickstart'.*eval"):
        command_main("quickstart", [])
