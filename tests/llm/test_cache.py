"""The on-disk response cache: keys, persistence, SIGKILL safety and several writer processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import efficientrag.llm as llm
from efficientrag.llm.cache import CACHE_FILE_NAME, ResponseCache, cache_key

REQ = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0}

WRITER = textwrap.dedent(
    """
    import sys
    from efficientrag.llm.cache import ResponseCache

    cache_dir, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cache = ResponseCache(cache_dir)
    start = len(cache)
    i = 0
    while count < 0 or i < count:
        cache.put(
            f"{prefix}{start + i}",
            kind="chat",
            model="m",
            request={"i": start + i, "pad": "q" * 3000},
            response={"text": str(start + i) * 400, "finish_reason": "stop"},
        )
        if i == 40:
            print("ready", flush=True)
        i += 1
    cache.close()
    """
)


def test_put_get_and_persist_across_instances(tmp_path):
    resp = {"text": "Paris", "finish_reason": "stop", "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    with ResponseCache(tmp_path) as cache:
        key = cache_key("chat", REQ)
        assert cache.get(key) is None
        cache.put(key, kind="chat", model="m", request=REQ, response=resp)
        assert cache.get(key) == resp
        assert key in cache and len(cache) == 1
    with ResponseCache(tmp_path) as again:
        assert again.get(key) == resp
        mode = again._conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert (tmp_path / CACHE_FILE_NAME).is_file()


def test_key_is_canonical_and_covers_every_output_changing_field():
    base = cache_key("chat", REQ)
    assert base == cache_key("chat", dict(reversed(list(REQ.items()))))
    assert len(base) == 64
    variants = [
        cache_key("completions", REQ),
        cache_key("chat", {**REQ, "model": "m2"}),
        cache_key("chat", {**REQ, "temperature": 0.5}),
        cache_key("chat", {**REQ, "max_tokens": 10}),
        cache_key("chat", {**REQ, "stop": ["\n"]}),
        cache_key("chat", {**REQ, "seed": 1}),
        cache_key("chat", {**REQ, "top_p": 0.9}),
        cache_key("chat", {**REQ, "logprobs": True}),
        cache_key("chat", {**REQ, "logprobs": True, "top_logprobs": 5}),
        cache_key("chat", {**REQ, "messages": [{"role": "user", "content": "hi!"}]}),
        cache_key("chat", REQ, {"top_k": 5}),
    ]
    assert len(set(variants + [base])) == len(variants) + 1


def test_unreadable_cache_file_gives_a_clear_error(tmp_path):
    (tmp_path / CACHE_FILE_NAME).write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(sqlite3.DatabaseError, match="move it away"):
        ResponseCache(tmp_path)


def _start_writer(cache_dir, prefix: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(cache_dir), prefix, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_survives_sigkill_mid_write(tmp_path):
    # Kill a busy writer three times; each restart must find an intact database holding every
    # entry committed before the kill (keys are numbered, so a gap would show).
    for _ in range(3):
        proc = _start_writer(tmp_path, "k", -1)
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        with ResponseCache(tmp_path) as cache:
            assert cache._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            n = len(cache)
            assert n >= 41
            for i in range(n):
                entry = cache.get(f"k{i}")
                assert entry is not None and entry["text"] == str(i) * 400


def test_several_processes_write_the_same_cache(tmp_path):
    procs = [_start_writer(tmp_path, f"p{j}-", 150) for j in range(3)]
    for proc in procs:
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    with ResponseCache(tmp_path) as cache:
        assert len(cache) == 450
        for j in range(3):
            # Each writer numbers from the size it saw at start, so collect by prefix.
            rows = cache._conn.execute(
                "SELECT key, response FROM responses WHERE key LIKE ?", (f"p{j}-%",)
            ).fetchall()
            assert len(rows) == 150
            for key, response in rows:
                assert json.loads(response)["text"] == key.split("-")[1] * 400


def test_cache_import_does_not_need_the_openai_sdk(tmp_path):
    code = "import sys, efficientrag.llm.cache; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert llm.ResponseCache is ResponseCache
