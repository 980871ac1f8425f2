"""retriever.kind=milvus against a real Milvus Standalone server (PyPI ``milvus``, 2.3.5: the
server binary and a Python API that starts it; the `milvus-server` extra): the dense index filled
by `efficientrag index` answers as FAISS Flat does, a kill -9 of `index` resumes with every row
exactly once, and BM25 / hybrid on this pre-2.5 server stop with one line naming the version.

Slow (the server starts in seconds, the suite takes about a minute): `pytest -m slow
tests/retrieval/test_milvus_server.py`. The server runs from a temporary folder on free ports and is
stopped at the end; every request goes to 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("pymilvus", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")
milvus_server = pytest.importorskip(
    "milvus", reason="needs the Milvus server package: pip install 'efficientrag[milvus-server]'"
)

from efficientrag.cli import main  # noqa: E402
from efficientrag.config import load_config  # noqa: E402
from efficientrag.experiment.config import ExperimentConfig  # noqa: E402
from efficientrag.experiment.prepared_data import prepare_data  # noqa: E402
from efficientrag.retrieval.config import RetrieverConfig  # noqa: E402
from efficientrag.retrieval.milvus.index import count_rows  # noqa: E402
from efficientrag.testing.kill_mid_run import kill_when  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.milvus]

TOY = str(Path(__file__).resolve().parents[2] / "configs" / "experiments" / "toy.yaml")
START_TIMEOUT_S = 120
BATCH = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Milvus Standalone server in a temporary folder; yields its uri, stops it at the end."""
    if not hasattr(milvus_server, "MilvusServer"):
        pytest.skip("the installed `milvus` package has no MilvusServer (not the embedded Milvus server)")
    base = tmp_path_factory.mktemp("milvus-server")
    srv = milvus_server.MilvusServer(
        milvus_server.MilvusServerConfig(data_dir=str(base)), wait_for_started=False
    )
    try:
        srv.start()  # unpacks the binary under base/bin, picks free ports, runs `milvus run standalone`
        _wait_healthy(srv, base)
        yield f"http://127.0.0.1:{srv.listen_port}"
    finally:
        srv.stop()


def _wait_healthy(srv, base: Path) -> None:
    """Until /healthz says OK; a process that exits means the binary does not run here (skip)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    health = f"http://127.0.0.1:{srv.webservice_port}/healthz"
    while time.monotonic() < deadline:
        code = srv.server_proc.poll()
        if code is not None:
            pytest.skip(
                f"the Milvus server binary exited with {code} here (log: {base}/logs/milvus-stderr.log)"
            )
        try:
            with urllib.request.urlopen(health, timeout=2) as resp:
                if b"OK" in resp.read():
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the Milvus server did not answer {health} within {START_TIMEOUT_S} s (logs: {base}/logs)")


def server_args(work: Path, uri: str, collection: str, *extra: str) -> list[str]:
    return [
        "--config", TOY, "--work-dir", str(work), "data.toy.num_questions=200", "retriever.kind=milvus",
        f"retriever.milvus.uri={uri}", f"retriever.milvus.collection={collection}", *extra,
    ]  # fmt: skip


def experiment(args: list[str]) -> ExperimentConfig:
    work = args[args.index("--work-dir") + 1]
    return load_config(ExperimentConfig, TOY, args[4:] + [f"work_dir={work}"])


def client_for(uri: str):
    from pymilvus import MilvusClient

    return MilvusClient(uri=uri, timeout=10)


def ids(results):
    return [[h.id for h in hits] for hits in results]


def test_dense_index_on_the_server_searches_as_faiss_flat(server, tmp_path, minilm_path):
    from efficientrag.retrieval.encoder import Encoder
    from efficientrag.retrieval.factory import build_retriever, load_retriever

    args = server_args(tmp_path / "w", server, "dense", f"retriever.encoder={minilm_path}")
    assert main(["index", *args]) == 0
    cfg = experiment(args)
    pooled = prepare_data(cfg)
    encoder = Encoder(minilm_path, show_progress=False)
    milvus = load_retriever(cfg.retriever, None, cfg.index_dir, encoder=encoder, show_progress=False)
    faiss = build_retriever(RetrieverConfig(), pooled.corpus, encoder=encoder, show_progress=False)
    queries = [e.question for e in pooled.examples]
    got, want = milvus.search(queries, 5), faiss.search(queries, 5)
    assert milvus.meta["rows"] == len(pooled.corpus)
    assert ids(got) == ids(want)
    for a, b in zip(got, want, strict=True):
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)
    assert got[0][0].chunk == pooled.corpus.get(got[0][0].id)  # rebuilt from the server's fields
    milvus.close()


def test_index_killed_with_kill_9_resumes_with_every_row_exactly_once(
    server, tmp_path, minilm_path, repo_root, monkeypatch
):
    name = "resumed"
    args = server_args(
        tmp_path / "w",
        server,
        name,
        f"retriever.encoder={minilm_path}",
        f"retriever.milvus.insert_batch_size={BATCH}",
    )
    client = client_for(server)

    def rows() -> int:
        try:
            return count_rows(client, name) if client.has_collection(name) else 0
        except Exception:  # noqa: BLE001 - a collection still being created counts as empty
            return 0

    cmd = [sys.executable, "-m", "efficientrag.cli", "index", *args]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # kill_when passes this environment on
    killed_at, output = kill_when(cmd, repo_root, rows, at=3 * BATCH, timeout=300)
    assert killed_at is not None, f"the index run was not killed mid-way:\n{output[-2000:]}"
    corpus = prepare_data(experiment(args)).corpus
    before = rows()
    assert 0 < before < len(corpus) and before % BATCH == 0, (before, len(corpus))

    assert main(["index", *args]) == 0
    stored = client.query(
        name, filter="", output_fields=["id"], limit=len(corpus) + 100, consistency_level="Strong"
    )
    stored_ids = [r["id"] for r in stored]
    assert count_rows(client, name) == len(corpus)
    assert sorted(stored_ids) == sorted(corpus.ids)  # each chunk once: no duplicate, none lost
    client.close()


@pytest.mark.parametrize("search", ["bm25", "hybrid"])
def test_bm25_and_hybrid_on_a_server_before_2_5_is_one_line_with_its_version(
    server, tmp_path, repo_root, search
):
    from efficientrag.retrieval.milvus.version import FULL_TEXT_MIN, parse_version

    client = client_for(server)
    version = client.get_server_version()
    parsed = parse_version(version)
    if parsed is None or parsed >= FULL_TEXT_MIN:
        pytest.skip(f"this server is {version}, which has full-text search")
    name = f"needs_{search}"
    args = server_args(tmp_path / "w", server, name, f"retriever.milvus.search={search}")
    res = subprocess.run(
        [sys.executable, "-m", "efficientrag.cli", "index", *args],
        cwd=repo_root, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr == (
        f"error: Milvus server at {server} is {version}; search: bm25 and hybrid need Milvus >= 2.5 "
        "(full-text search); `search: dense` works on this server\n"
    )
    assert not client.has_collection(name)  # refused before anything was created
    client.close()
