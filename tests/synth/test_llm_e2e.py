"""The whole synthesis with the LLM teacher, end to end over the toy world, against the fake
OpenAI server with ~30% injected faults: a run in a subprocess is SIGKILLed mid-run and resumed.

The server lives in this process, so it sees every request of both runs. Its "model" is the
synthesis oracle, which writes each reply from the prompt (and gets a few records wrong on
purpose), so the run produces real training rows and real rejects. Checked: every input of every
stage ends in its output or its rejects file with a reason, no id twice anywhere, the resumed run
asks nothing the cache already holds, and a forced rerun is answered entirely from the cache.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

import yaml

from efficientrag.config import load_config
from efficientrag.jsonl import read_jsonl
from efficientrag.llm.cache import CACHE_FILE_NAME, cache_key
from efficientrag.synth.config import SynthConfig
from efficientrag.synth.pipeline import run_synthesis
from efficientrag.synth.records import OUTPUT_FILES, R_COUNT, R_DEPENDENCY, STAGES
from efficientrag.synth.steps import R_NOT_ALIGNED
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.synth_oracle import SynthOracle

NUM_QUESTIONS = 40
KILL_AFTER_LABELS = 15


def write_config(tmp_path, base_url):
    cfg = {
        "data": {"dataset": "toy", "toy": {"seed": 11, "num_questions": NUM_QUESTIONS}},
        "teacher": "llm",
        "llm": {
            "base_url": base_url,
            "model": "fake-model",
            "cache_dir": str(tmp_path / "cache"),
            "max_retries": 10,
            "backoff_base": 0.01,
            "backoff_max": 0.05,
            "max_retry_after": 0.05,
            "timeout": 10,
            "max_tokens": 512,
        },
        "retriever": {"kind": "bm25"},
        "concurrency": 4,
        "out_dir": str(tmp_path / "out"),
        "progress": False,
    }
    path = tmp_path / "synth.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def synth_process(repo_root, config, log):
    return subprocess.Popen(
        [sys.executable, str(repo_root / "synth" / "run.py"), "--config", str(config)],
        cwd=repo_root,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "test-key"},
    )


def lines(path):
    return list(read_jsonl(path, allow_torn_tail=True)) if path.is_file() else []


def cached_keys(cache_dir):
    with sqlite3.connect(cache_dir / CACHE_FILE_NAME) as conn:
        return {row[0] for row in conn.execute("SELECT key FROM responses")}


def rows(out):
    return {
        f"{model}/{split}": sorted(
            json.dumps(r, sort_keys=True) for r in lines(out / model / f"{split}.jsonl")
        )
        for model in ("labeler", "filter")
        for split in ("train", "validation")
    }


def test_killed_llm_synthesis_resumes_to_complete_accounted_data(tmp_path, repo_root):
    out = tmp_path / "out"
    oracle = SynthOracle(cycle_every=9, drop_every=11, invent_every=10, wrap_every=3)
    with FakeOpenAIServer(oracle, latency=0.03, fault_rate=0.3, seed=7, retry_after=0.01) as srv:
        config = write_config(tmp_path, srv.base_url)

        # Run 1: killed while the label stage is half done.
        with open(tmp_path / "run1.log", "wb") as log:
            proc = synth_process(repo_root, config, log)
            try:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and proc.poll() is None:
                    if len(lines(out / OUTPUT_FILES["label"])) >= KILL_AFTER_LABELS:
                        break
                    time.sleep(0.01)
                assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert (out / "decompose.done.json").is_file() and not (out / "label.done.json").exists()
        first_run = len(srv.received)
        cached_after_kill = cached_keys(tmp_path / "cache")

        # Run 2: the same command resumes and finishes.
        with open(tmp_path / "run2.log", "wb") as log:
            proc = synth_process(repo_root, config, log)
            assert proc.wait(timeout=180) == 0, (tmp_path / "run2.log").read_text()[-3000:]
        second = srv.received[first_run:]

        # The server saw at least 20% faults, and the client retried through all of them.
        faults = sum(1 for r in srv.received if r.fault)
        assert faults / len(srv.received) >= 0.2, srv.stats()
        assert set(srv.faults_injected) <= {"500", "502", "503", "429", "malformed"}

        # Nothing the cache held after the kill was asked again. (The keys are computed right:
        # everything cached in run 1 is the key of a request run 1 made.)
        assert cached_after_kill
        assert cached_after_kill <= {cache_key("chat", r.body, {}) for r in srv.received[:first_run]}
        assert second
        for request in second:
            assert cache_key("chat", request.body, {}) not in cached_after_kill

        # Run 3 (in-process, forced from scratch): every answer comes from the cache.
        before = len(srv.received)
        rows_after_resume = rows(out)
        stats = run_synthesis(load_config(SynthConfig, config, ["force=true"]))
        assert len(srv.received) == before
        assert rows(out) == rows_after_resume
    record = json.loads((out / "llm_usage.json").read_text())
    last = record["runs"][-1]["total"]
    assert last["calls"] == last["cached"] > 0 and last["retries"] == 0 and last["prompt_tokens"] == 0
    # The folder's record sums the runs that finished (run 1 was killed before writing its own):
    # run 2 paid for what run 1 left, run 3 paid nothing.
    assert len(record["runs"]) == 2
    assert record["total"]["prompt_tokens"] == record["runs"][0]["total"]["prompt_tokens"] > 0
    assert record["total"]["calls"] == sum(r["total"]["calls"] for r in record["runs"])

    # Every input of every stage is an output or a reject (with a reason), never both, never twice.
    decomposed = lines(out / OUTPUT_FILES["decompose"])
    seen = {}
    for stage in STAGES[:-1]:
        outputs = [r["id"] for r in lines(out / OUTPUT_FILES[stage])]
        rejects = lines(out / f"{stage}.rejects.jsonl")
        assert len(outputs) == len(set(outputs)), f"{stage}: duplicate output ids"
        reject_ids = [r["id"] for r in rejects]
        assert len(reject_ids) == len(set(reject_ids)), f"{stage}: duplicate reject ids"
        assert not set(outputs) & set(reject_ids)
        assert all(r["reason"] and r["stage"] == stage for r in rejects)
        assert not [r for r in rejects if r["reason"].startswith("error: ")]  # faults were retried away
        seen[stage] = (set(outputs), set(outputs) | set(reject_ids), Counter(r["reason"] for r in rejects))
    sub_ids = {f"{r['id']}#{s['idx']}" for r in decomposed for s in r["sub_questions"]}
    assert len(seen["decompose"][1]) == NUM_QUESTIONS and len(decomposed) == len(seen["decompose"][0])
    assert seen["label"][1] == sub_ids
    assert seen["align"][1] == seen["label"][0]
    assert seen["next_hop"][1] == seen["align"][0]
    assert seen["negatives"][1] == seen["next_hop"][0]
    # The oracle's deliberate mistakes were caught, each with its own reason.
    assert seen["decompose"][2][R_DEPENDENCY] >= 1 and seen["decompose"][2][R_COUNT] >= 1
    assert seen["align"][2][R_NOT_ALIGNED] >= 1

    # Real training rows: positives label the sub-question's answer, Filter rows exist.
    s = stats["datasets"]["toy"]
    assert s["labeler"]["rows"] > 0 and s["filter"]["rows"] > 0
    row_ids = [json.loads(r)["id"] for built in rows(out).values() for r in built]
    assert len(row_ids) == len(set(row_ids)) == s["labeler"]["rows"] + s["filter"]["rows"]
    assert s["align_rate"]["min"] >= 0.8 and s["filter_align_rate"]["min"] >= 0.8
    answers = {f"{r['id']}#{q['idx']}": q["answer"] for r in decomposed for q in r["sub_questions"]}
    positives = [r for split in ("train", "validation") for r in lines(out / "labeler" / f"{split}.jsonl")]
    positives = [r for r in positives if r["tag"] == "continue"]
    assert positives
    for row in positives:
        labeled = " ".join(w for w, lab in zip(row["chunk_words"], row["labels"], strict=True) if lab)
        assert answers[row["id"].rsplit("/", 1)[0]] in labeled
