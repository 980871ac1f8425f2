"""`efficientrag index` into Milvus Lite: resume after kill -9, eval/retrieve on a collection with
no corpus, and the CLI's one-line errors."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")
pytest.importorskip("milvus_lite", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")

from efficientrag.cli import main  # noqa: E402

pytestmark = pytest.mark.milvus

BATCH = 8
TOY = str(Path(__file__).resolve().parents[2] / "configs" / "experiments" / "toy.yaml")


def toy_args(work, *extra):
    return [
        "--config", TOY, "--work-dir", str(work),
        "data.toy.num_questions=40", "retriever.kind=milvus", *extra,
    ]  # fmt: skip


class CountingEncoder:
    """The real encoder, counting the passages it is asked to embed."""

    def __init__(self, encoder):
        self.inner, self.passages = encoder, 0
        self.dim, self.name = encoder.dim, encoder.name

    def encode_passages(self, texts, **kw):
        self.passages += len(texts)
        return self.inner.encode_passages(texts, **kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_index_resumes_after_kill_9_without_embedding_or_losing_anything(tmp_path, minilm_path, repo_root):
    from efficientrag.config import load_config
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.retrieval.encoder import Encoder
    from efficientrag.retrieval.factory import build_retriever
    from efficientrag.retrieval.milvus import staging_file
    from efficientrag.retrieval.milvus.index import count_rows, present_ids

    work = tmp_path / "w"
    args = toy_args(work, f"retriever.encoder={minilm_path}", f"retriever.milvus.insert_batch_size={BATCH}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "efficientrag.cli", "index", *args],
        cwd=repo_root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    seen = []

    def watch():  # tqdm redraws with \r: read raw bytes, kill once 3 batches are in
        buf = b""
        while (byte := proc.stderr.read(1)) != b"":
            buf += byte
            done = [int(n) for n in re.findall(rb"Filling Milvus[^|]*\|[^|]*\| *(\d+)/", buf[-300:])]
            if done and done[-1] >= 3 * BATCH:
                seen.append(done[-1])
                proc.send_signal(signal.SIGKILL)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    proc.wait(timeout=300)
    watcher.join(timeout=10)
    assert proc.returncode == -signal.SIGKILL, "the index run finished before it could be killed"

    cfg = load_config(ExperimentConfig, TOY, args[4:] + [f"work_dir={work}"])
    corpus = prepare_data(cfg).corpus
    encoder = CountingEncoder(Encoder(minilm_path, show_progress=False))
    client = __import__("pymilvus").MilvusClient(str(cfg.index_dir / "milvus.db"))
    client.load_collection("efficientrag")
    before = count_rows(client, "efficientrag")
    client.close()
    assert 0 < before < len(corpus) and before % BATCH == 0, (before, len(corpus), seen)

    # A batch encoded but not inserted at the kill waits in the staging file: it is not encoded again.
    staged = staging_file(str(cfg.index_dir / "milvus.db"), "efficientrag", cfg.index_dir)
    waiting = 0
    if staged.is_file():
        with np.load(staged, allow_pickle=False) as saved:
            waiting = len(set(saved["ids"].tolist()) - set(corpus.ids[:before]))
    retriever = build_retriever(cfg.retriever, corpus, cfg.index_dir, encoder=encoder, show_progress=False)
    # Only what was missing is embedded ...
    assert encoder.passages == len(corpus) - before - waiting
    assert not staged.exists()
    # ... and every chunk is there exactly once.
    assert count_rows(retriever.client, "efficientrag") == len(corpus)
    assert present_ids(retriever.client, retriever.m, corpus.ids) == set(corpus.ids)


def test_eval_and_retrieve_run_on_a_collection_without_a_corpus(tmp_path, capsys, saved_minilm_models):
    work = tmp_path / "w"
    bm25 = ["retriever.milvus.search=bm25"]
    assert main(["index", *toy_args(work, *bm25)]) == 0
    assert "collection 'efficientrag'" in capsys.readouterr().out
    assert main(["eval", *toy_args(work, *bm25), "--method", "direct_r", "--limit", "10"]) == 0
    out = capsys.readouterr().out
    assert "10 questions" in out
    summary = __import__("json").loads((work / "eval" / "direct_r" / "summary.json").read_text())
    assert summary["retrieval"]["10"]["recall"] > 50  # gold ids from the dataset found in Milvus
    # The run records the collection it searched and what that was filled from.
    assert (
        summary["collection"]["collection"] == "efficientrag" and summary["collection"]["corpus_fingerprint"]
    )

    # retrieve asks the collection without reading any dataset (this one does not exist).
    models = [
        "--labeler",
        str(saved_minilm_models / "labeler"),
        "--filter",
        str(saved_minilm_models / "filter"),
    ]
    no_data = ["data.dataset=hotpotqa", f"data.path={tmp_path / 'absent.json'}"]
    assert (
        main(["retrieve", *toy_args(work, *bm25, *no_data), *models, "-q", "Who founded it?", "--json"]) == 0
    )
    answer = __import__("json").loads(capsys.readouterr().out)
    assert answer["trace"][0]["hits"][0], "the first hop found nothing in the collection"

    # A collection filled from another corpus is refused before any question: one line, exit 2.
    other = tmp_path / "other"
    assert main(["index", *toy_args(other, *bm25, "data.toy.seed=7")]) == 0
    capsys.readouterr()
    uri = f"retriever.milvus.uri={other / 'index' / 'milvus' / 'milvus.db'}"
    assert main(["eval", *toy_args(work, *bm25, uri), "--method", "direct_r", "--limit", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "was filled from another corpus" in err and "\n" not in err
    assert "than the toy world (data.dataset=toy)" in err
    # Said to be foreign, it is searched; holding none of the gold ids still stops the run.
    foreign = "retriever.milvus.foreign_collection=true"
    assert main(["eval", *toy_args(work, *bm25, uri, foreign), "--method", "direct_r", "--limit", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "holds none of the" in err and "\n" not in err


def test_cli_errors_are_one_line(tmp_path, capsys):
    work = tmp_path / "w"
    assert main(["eval", *toy_args(work, "retriever.milvus.search=bm25"), "--method", "direct_r"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no Milvus Lite database there" in err and "\n" not in err
    bad = [
        "retriever.milvus.uri=http://127.0.0.1:9",
        "retriever.milvus.timeout_s=2",
        "retriever.milvus.search=bm25",
    ]
    # (eval with direct_r: `retrieve` would first ask for the trained model folders)
    assert main(["eval", *toy_args(work, *bad), "--method", "direct_r"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot reach Milvus at http://127.0.0.1:9" in err and "\n" not in err


def run_cli(repo_root, *args):
    return subprocess.run(
        [sys.executable, "-m", "efficientrag.cli", *args],
        cwd=repo_root, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_successful_lite_index_and_eval_print_no_grpc_traceback(tmp_path, repo_root):
    """Milvus Lite leaves RPCs unimplemented that pymilvus calls (AllocTimestamp while an index is
    built); gRPC logged each as an ERROR traceback on every successful command."""
    args = toy_args(tmp_path / "w", "retriever.milvus.search=bm25")
    for command in (["index", *args], ["eval", *args, "--method", "direct_r", "--limit", "3"]):
        res = run_cli(repo_root, *command)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Traceback" not in res.stderr and "Method not implemented" not in res.stderr, res.stderr
        assert "MilvusLite server" not in res.stderr  # its start/stop lines on every command


def test_unusable_lite_paths_are_one_line_with_the_real_cause(tmp_path, repo_root):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    cases = [(a_file / "milvus.db", f"{a_file} is a file, not a folder")]
    if Path("/sys").is_dir():  # sysfs takes no new files, not even from root
        cases.append((Path("/sys/efficientrag-test/milvus.db"), "cannot write in /sys ("))
    for uri, cause in cases:
        res = run_cli(
            repo_root,
            "index",
            *toy_args(tmp_path / "w", "retriever.milvus.search=bm25", f"retriever.milvus.uri={uri}"),
        )
        assert res.returncode == 2, res.stderr[-2000:]
        assert res.stderr.strip() == res.stderr.strip().splitlines()[0], res.stderr  # one line, no traceback
        assert (
            res.stderr.startswith(f"error: cannot open the Milvus Lite database {uri}: ")
            and cause in res.stderr
        )
        assert "another process" not in res.stderr
