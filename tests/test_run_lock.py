"""One writer per folder: a second process is refused with one line naming the holder (PID, host,
start time) or waits when asked; the lock is re-entrant within a process; a lock left by a process
killed with SIGKILL is taken over, naming the dead holder."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from efficientrag.run_lock import LOCK_FILE, FolderLockedError, folder_lock, read_holder
from efficientrag.testing.kill_mid_run import kill_when

# Holds the folder's lock until its stdin is closed; says "locked" once it holds it.
HOLDER = (
    "import sys\n"
    "from efficientrag.run_lock import folder_lock\n"
    "with folder_lock(sys.argv[1]):\n"
    "    print('locked', flush=True)\n"
    "    sys.stdin.read()\n"
)


def start_holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def stop_holder(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_a_second_process_is_refused_with_one_line_naming_the_holder(tmp_path):
    holder = start_holder(tmp_path)
    try:
        with (
            pytest.raises(FolderLockedError) as err,
            folder_lock(tmp_path, what="run folder", hint="try later"),
        ):
            pass
    finally:
        stop_holder(holder)
    message = str(err.value)
    assert "\n" not in message
    recorded = err.value.holder
    assert recorded is not None and recorded.pid == holder.pid and recorded.host == socket.gethostname()
    assert message == (
        f"run folder {tmp_path} is in use by PID {holder.pid} on {recorded.host}, "
        f"started {recorded.started}; try later"
    )
    # The start time is the holder's: an ISO timestamp from the last minute.
    from datetime import datetime

    age = datetime.now().astimezone() - datetime.fromisoformat(recorded.started)
    assert 0 <= age.total_seconds() < 60
    # Released cleanly: the file names nobody, and the folder can be taken.
    assert read_holder(tmp_path / LOCK_FILE) is None
    with folder_lock(tmp_path):
        assert read_holder(tmp_path / LOCK_FILE).pid == os.getpid()


def test_wait_mode_takes_the_lock_once_the_holder_is_done(tmp_path, caplog):
    holder = start_holder(tmp_path)
    releaser = threading.Timer(1.0, holder.stdin.close)
    started = time.monotonic()
    releaser.start()
    try:
        with (
            caplog.at_level(logging.WARNING, logger="efficientrag.run_lock"),
            folder_lock(tmp_path, wait=True),
        ):
            waited = time.monotonic() - started
            assert holder.wait(timeout=30) == 0  # it released the lock on its way out
            assert read_holder(tmp_path / LOCK_FILE).pid == os.getpid()
    finally:
        releaser.cancel()
        if holder.poll() is None:
            holder.kill()
    assert waited >= 0.9
    assert f"is in use by PID {holder.pid}" in caplog.text and "waiting for it to finish" in caplog.text
    assert "took over" not in caplog.text  # a clean release is not a takeover


def test_the_lock_is_reentrant_within_a_process_and_held_until_the_outermost_exit(tmp_path):
    probe = [sys.executable, "-c", HOLDER.replace("sys.stdin.read()", "pass"), str(tmp_path)]
    with folder_lock(tmp_path):
        with folder_lock(tmp_path / "."):  # the same folder by another spelling
            pass
        # Still held after the inner exit: another process is refused.
        refused = subprocess.run(probe, capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0 and f"in use by PID {os.getpid()}" in refused.stderr
    assert subprocess.run(probe, capture_output=True, text=True, timeout=60).returncode == 0


def test_a_lock_left_by_a_killed_process_is_taken_over_naming_it(tmp_path, caplog):
    lock = tmp_path / LOCK_FILE

    def holding() -> int:
        return int(read_holder(lock) is not None)

    sleeper = HOLDER.replace("sys.stdin.read()", "__import__('time').sleep(600)")
    killed_at, output = kill_when(
        [sys.executable, "-c", sleeper, str(tmp_path)], tmp_path, holding, at=1, timeout=60
    )
    assert killed_at == 1, output
    dead = read_holder(lock)  # kill -9: no handler ran, the file still names it
    assert dead is not None
    with pytest.raises(ProcessLookupError):
        os.kill(dead.pid, 0)
    with (
        caplog.at_level(logging.WARNING, logger="efficientrag.run_lock"),
        folder_lock(tmp_path, what="run folder"),
    ):
        assert read_holder(lock).pid == os.getpid()
    assert (
        f"run folder {tmp_path}: took over the lock left by PID {dead.pid} on {dead.host}, "
        f"started {dead.started}, which is no longer running"
    ) in caplog.text
    assert lock.read_text() == ""


def test_self_training_decisions_are_locked_and_repaired_on_resume(tmp_path, caplog):
    from efficientrag.adapt.self_training import Question, record_decisions
    from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, scripted_rag

    rag = scripted_rag()
    out = tmp_path / "decisions.jsonl"
    alpha, omega = Question("alpha", ALPHA_QUESTION), Question("omega", OMEGA_QUESTION)
    holder = start_holder(tmp_path)
    try:
        with pytest.raises(
            FolderLockedError, match=f"self-training folder {tmp_path} is in use by PID {holder.pid}"
        ):
            record_decisions(rag, [alpha], out, progress=False)
    finally:
        stop_holder(holder)
    assert not out.exists()
    assert record_decisions(rag, [alpha], out, progress=False) == 1
    line = out.read_text()
    out.write_text(line + line)  # what two writers at once left
    with caplog.at_level(logging.WARNING, logger="efficientrag.jsonl"):
        assert record_decisions(rag, [alpha, omega], out, progress=False) == 1
    assert "decisions.jsonl held 1 duplicate records" in caplog.text
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["alpha", "omega"]


def test_a_dense_index_build_waits_for_another_builder_or_is_refused(tmp_path, caplog):
    from efficientrag.data.corpus import Corpus
    from efficientrag.data.schema import Chunk
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.dense import DenseRetriever
    from efficientrag.testing.hashed_dense import HashedEncoder

    corpus = Corpus(Chunk(f"c{i}", f"T{i}", f"text number {i}") for i in range(6))

    class Hashed(HashedEncoder):  # the attributes a saved dense index records
        compute_dtype, query_prefix = "float32", ""

        def describe(self):
            return {
                "encoder": self.name,
                "dim": self.dim,
                "normalize": True,
                "max_length": 32,
                "passage_prefix": "",
            }

        def encode_passages(self, texts, progress=None):
            return super().encode_passages(texts)

        def probe(self):
            return self.encode_queries(["probe"])[0]

    encoder = Hashed(dim=8)
    index_dir = tmp_path / "index"
    cfg = RetrieverConfig(shard_size=2)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.replace("folder_lock(sys.argv[1])", "path_lock(sys.argv[1], what='x')")
         .replace("import folder_lock", "import path_lock"), str(tmp_path / ".index.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    try:
        with pytest.raises(
            FolderLockedError, match=f"index folder {index_dir} is in use by PID {holder.pid}"
        ):
            DenseRetriever.build(
                corpus, cfg, index_dir, encoder=encoder, show_progress=False, wait_for_lock=False
            )
        assert not (index_dir / "embeddings").exists()
        threading.Timer(0.5, holder.stdin.close).start()
        with caplog.at_level(logging.WARNING, logger="efficientrag.run_lock"):
            built = DenseRetriever.build(corpus, cfg, index_dir, encoder=encoder, show_progress=False)
    finally:
        if holder.poll() is None:
            holder.stdin.close()
        holder.wait(timeout=30)
    assert f"index folder {index_dir} is in use by PID {holder.pid}" in caplog.text
    assert built.index.ntotal == 6 and ".lock" not in {p.name for p in index_dir.iterdir()}
