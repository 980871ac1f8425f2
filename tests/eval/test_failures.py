"""Runs that fail fail fast and say so: a dead endpoint costs a second per question, not minutes;
the first questions all failing alike stops the run; failures give a non-zero exit unless allowed;
SIGINT/SIGTERM keep what is done and the rerun finishes with the same results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from efficientrag.cli import main
from efficientrag.llm.async_client import AsyncLLMClient
from efficientrag.testing.fake_openai import FakeOpenAIServer

TOY = ["--dataset", "toy", "data.toy.num_questions=12", "retriever.kind=bm25", "--method", "direct"]


def generator(url: str) -> list[str]:
    return [
        "generator.backend=openai",
        f"generator.openai.llm.base_url={url}",
        "generator.openai.llm.model=m",
    ]


@pytest.fixture
def counted_posts(monkeypatch) -> list[str]:
    """Every HTTP request the LLM client attempts (through the real client code)."""
    calls: list[str] = []
    real = AsyncLLMClient._post

    async def counting(self, kind, request, extra_body):
        calls.append(kind)
        return await real(self, kind, request, extra_body)

    monkeypatch.setattr(AsyncLLMClient, "_post", counting)
    return calls


def errors_of(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "errors.jsonl").read_text().splitlines()]


def test_a_dead_endpoint_fails_each_question_once_and_the_run_exits_nonzero(tmp_path, capsys, counted_posts):
    srv = FakeOpenAIServer().start()
    with srv.refusing():
        code = main(["eval", *TOY, "--limit", "2", "--work-dir", str(tmp_path), *generator(srv.base_url)])
    srv.stop()
    assert code == 1
    run = tmp_path / "eval" / "direct"
    errors = errors_of(run)
    assert [e["id"] for e in errors] and len(errors) == 2
    assert all(
        e["error"].startswith("EndpointUnreachableError: cannot reach the LLM endpoint") for e in errors
    )
    assert all(srv.base_url in e["error"] for e in errors)
    # One attempt and one short retry per question; the failed batch is not retried question by question.
    assert len(counted_posts) == 2 * 2
    err = capsys.readouterr().err
    assert "2 of 2 questions failed" in err and str(run / "errors.jsonl") in err


def test_the_run_stops_once_its_first_questions_all_fail_alike(tmp_path, capsys):
    srv = FakeOpenAIServer().start()
    with srv.refusing():
        args = ["eval", *TOY, "--limit", "8", "--work-dir", str(tmp_path), *generator(srv.base_url),
                "eval.batch_size=1", "eval.fail_fast_after=3"]  # fmt: skip
        code = main(args)
    srv.stop()
    assert code == 1
    run = tmp_path / "eval" / "direct"
    assert len(errors_of(run)) == 3  # questions 4-8 were never tried
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: stopped: the first 3 questions all failed with the same error")
    assert "EndpointUnreachableError" in last and "errors.jsonl" in last


def test_failures_exit_nonzero_unless_allowed(tmp_path, capsys):
    # One question's requests are refused with a 400 (not retryable): it fails, the others succeed.
    def faults(index, endpoint, body):
        return "400" if "q-fail" in json.dumps(body) else None

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"c{i}", "title": f"T{i}", "text": f"fact {i}"}) + "\n" for i in range(4))
    )
    questions = tmp_path / "q.jsonl"
    rows = [{"id": f"q{i}", "question": f"what is fact {i}?" + (" q-fail" if i == 2 else ""),
             "answers": [str(i)], "gold_ids": [f"c{i}"]} for i in range(4)]  # fmt: skip
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(lambda r: '{"answer": "x"}', faults=faults) as srv:
        base = ["eval", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus),
                "--method", "direct", "retriever.kind=bm25", *generator(srv.base_url)]  # fmt: skip
        assert main([*base, "--work-dir", str(tmp_path / "a")]) == 1
        assert "1 of 4 questions failed (eval.max_failures=0)" in capsys.readouterr().err
        assert main([*base, "--work-dir", str(tmp_path / "b"), "eval.max_failures=1"]) == 0
        assert "1 of 4 questions failed (eval.max_failures=1)" in capsys.readouterr().err
    summary = json.loads((tmp_path / "b" / "eval" / "direct" / "summary.json").read_text())
    assert summary["n"] == 3 and summary["num_failed"] == 1


def _eval_process(work: Path, url: str, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "efficientrag.cli", "eval", *TOY, "--limit", "8", "--work-dir", str(work),
            *generator(url), "eval.batch_size=2", *extra]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _untimed_records(run: Path) -> list[dict]:
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    for r in records:
        r.pop("counters", None)  # wall times
    return sorted(records, key=lambda r: r["id"])


def _wait_for_predictions(path: Path, at_least: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= at_least:
            return
        if proc.poll() is not None:
            raise AssertionError(f"eval ended early ({proc.returncode}): {proc.stderr.read()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("no predictions appeared")


@pytest.mark.parametrize(("signum", "times", "code"), [(signal.SIGINT, 1, 130), (signal.SIGTERM, 2, 143)])
def test_a_signal_keeps_what_is_done_and_the_rerun_finishes_identically(tmp_path, signum, times, code):
    # Each reply takes 0.3 s, so a batch of 2 is still in flight when the signal comes.
    with FakeOpenAIServer(lambda r: '{"answer": "Paris"}', latency=0.3) as srv:
        proc = _eval_process(tmp_path / "cut", srv.base_url)
        run = tmp_path / "cut" / "eval" / "direct"
        _wait_for_predictions(run / "predictions.jsonl", 2, proc)
        for _ in range(times):
            proc.send_signal(signum)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == code, err[-2000:]
        done = len((run / "predictions.jsonl").read_text().splitlines())
        name = signal.Signals(signum).name
        assert f"interrupted ({name}): {done} done, {8 - done} to go; rerun the same command to resume" in err
        assert "Traceback" not in err
        assert 2 <= done < 8 and done % 2 == 0  # whole batches only: none half written

        rerun = _eval_process(tmp_path / "cut", srv.base_url)
        _, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err[-2000:]
        straight = _eval_process(tmp_path / "straight", srv.base_url)
        straight.communicate(timeout=120)
        assert straight.returncode == 0
    assert _untimed_records(run) == _untimed_records(tmp_path / "straight" / "eval" / "direct")
    assert len(_untimed_records(run)) == 8
