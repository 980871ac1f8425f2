"""Two evaluations on one run folder: the second is refused with one line naming the first (or waits
with --wait), so predictions.jsonl holds each question once and the summary counts each once; a
folder that already holds an id twice is repaired on resume, saying how many were dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from efficientrag.cli import main
from efficientrag.testing.fake_openai import FakeOpenAIServer

QUESTIONS = 8
BATCH = 2
TOY = ["--dataset", "toy", "data.toy.num_questions=12", "retriever.kind=bm25", "--method", "direct",
       "--limit", str(QUESTIONS), f"eval.batch_size={BATCH}"]  # fmt: skip


class GatedResponder:
    """Answers the first ``free`` requests at once and holds every later one until ``release``:
    the first run writes one batch and then stays mid-run for as long as the test needs."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.count = 0
        self._count_lock = threading.Lock()
        self._gate = threading.Event()

    def __call__(self, request: dict) -> str:
        with self._count_lock:
            self.count += 1
            held = self.count > self.free
        if held:
            self._gate.wait(timeout=45)
        return '{"answer": "Paris"}'

    def release(self) -> None:
        self._gate.set()


def eval_args(work: Path, url: str, *extra: str) -> list[str]:
    return ["eval", *TOY, "--work-dir", str(work), "generator.backend=openai",
            f"generator.openai.llm.base_url={url}", "generator.openai.llm.model=m", *extra]  # fmt: skip


def start_eval(work: Path, url: str, *extra: str, stderr: Any = subprocess.PIPE) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "efficientrag.cli", *eval_args(work, url, *extra)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def wait_for(condition, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            err = proc.stderr.read()[-2000:] if proc.stderr else ""
            raise AssertionError(f"eval ended early ({proc.returncode}): {err}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_two_evals_on_one_folder_one_refuses_naming_the_other(tmp_path):
    gate = GatedResponder(free=BATCH)
    run = tmp_path / "eval" / "direct"
    with FakeOpenAIServer(gate) as srv:
        first = start_eval(tmp_path, srv.base_url)
        second = None
        try:
            # The first run has written its first batch and waits on its second one.
            wait_for(lambda: len(lines(run / "predictions.jsonl")) >= BATCH and gate.count > BATCH, first)
            second = start_eval(tmp_path, srv.base_url)
            # Until the second run is done, or asks the server anything itself (before folders were
            # locked, it went on to answer the same questions as the first).
            deadline = time.monotonic() + 120
            while second.poll() is None and gate.count <= 2 * BATCH and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            gate.release()
            first_out, first_err = first.communicate(timeout=120)
            second_out, second_err = second.communicate(timeout=120) if second else ("", "")
    assert first.returncode == 0, first_err[-2000:]
    assert second.returncode != 0, second_out[-2000:]
    refusal = [line for line in second_err.splitlines() if line.startswith("error:")]
    assert len(refusal) == 1, second_err[-2000:]
    assert refusal[0].startswith(f"error: run folder {run} is in use by PID {first.pid} on ")
    assert ", started " in refusal[0] and "--wait" in refusal[0]
    assert "Traceback" not in second_err
    ids = [r["id"] for r in lines(run / "predictions.jsonl")]
    assert len(ids) == QUESTIONS and len(set(ids)) == QUESTIONS
    assert json.loads((run / "summary.json").read_text())["n"] == QUESTIONS


def test_with_wait_the_second_eval_runs_after_the_first(tmp_path):
    gate = GatedResponder(free=BATCH)
    run = tmp_path / "eval" / "direct"
    second_log = tmp_path / "second.err"
    with FakeOpenAIServer(gate) as srv:
        first = start_eval(tmp_path, srv.base_url)
        second = None
        try:
            wait_for(lambda: len(lines(run / "predictions.jsonl")) >= BATCH and gate.count > BATCH, first)
            with second_log.open("w") as err:
                second = start_eval(tmp_path, srv.base_url, "--wait", stderr=err)
            # The first run goes on once the second says it is waiting for it.
            wait_for(lambda: "waiting for it to finish" in second_log.read_text(), second)
        finally:
            gate.release()
            _, first_err = first.communicate(timeout=120)
            if second is not None:
                second.communicate(timeout=120)
    second_err = second_log.read_text()
    assert first.returncode == 0, first_err[-2000:]
    assert second.returncode == 0, second_err[-2000:]
    assert f"run folder {run} is in use by PID {first.pid} on " in second_err
    assert f"resuming {run}: {QUESTIONS} done, 0 to go" in second_err
    ids = [r["id"] for r in lines(run / "predictions.jsonl")]
    assert len(ids) == QUESTIONS and len(set(ids)) == QUESTIONS


def test_a_folder_holding_an_id_twice_is_repaired_on_resume(tmp_path, capsys, caplog):
    with FakeOpenAIServer(lambda r: '{"answer": "Paris"}') as srv:
        assert main(eval_args(tmp_path, srv.base_url, "--limit", "4")) == 0
        run = tmp_path / "eval" / "direct"
        pred = run / "predictions.jsonl"
        records = lines(pred)
        # What two writers at once left: two ids twice, the copies with other scores.
        twins = [dict(r, answer="other", qa={**r["qa"], "em": 1.0 - r["qa"]["em"]}) for r in records[:2]]
        pred.write_text("".join(json.dumps(r) + "\n" for r in [*records, *twins]))
        assert main(eval_args(tmp_path, srv.base_url, "--limit", "4")) == 0
    assert (
        "held 2 duplicate records (two writers at once?): dropped them, kept the first per id" in caplog.text
    )
    assert "4 questions; per-question records" in capsys.readouterr().out
    assert lines(pred) == records  # the first of each id kept, in order
    summary = json.loads((run / "summary.json").read_text())
    assert summary["n"] == 4
    assert summary["qa"]["em"] == 100.0 * sum(r["qa"]["em"] for r in records) / 4
