"""retriever.kind=milvus against the real Milvus Lite engine (the `milvus` extra): dense, BM25 and
hybrid search, batch search, the checks on an existing collection, and the one-line errors."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymilvus", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")
pytest.importorskip("milvus_lite", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")

from efficientrag.data.corpus import Corpus  # noqa: E402
from efficientrag.data.schema import Chunk  # noqa: E402
from efficientrag.retrieval.config import RetrieverConfig  # noqa: E402
from efficientrag.retrieval.errors import (  # noqa: E402
    BackendUnavailableError,
    IndexMismatchError,
    IndexNotFoundError,
)
from efficientrag.retrieval.factory import build_retriever, load_retriever  # noqa: E402
from efficientrag.retrieval.milvus.config import MilvusConfig  # noqa: E402
from efficientrag.testing.scripted_models import ALPHA_QUESTION, bridge_corpus  # noqa: E402

pytestmark = pytest.mark.milvus

QUERIES = [ALPHA_QUESTION, "Bob Stone", "Carla Moss Lyon", "", "the of was"]


def milvus_cfg(uri, **kw) -> RetrieverConfig:
    bm25 = {k: kw.pop(k) for k in ("bm25_stemmer", "stopwords") if k in kw}
    return RetrieverConfig(kind="milvus", milvus=MilvusConfig(uri=str(uri), **kw), **bm25)


@pytest.fixture(scope="module")
def filled(tmp_path_factory, encoder):
    """The bridge corpus in one Lite file, holding dense vectors and BM25 (store: both)."""
    uri = tmp_path_factory.mktemp("milvus") / "bridge.db"
    retriever = build_retriever(
        milvus_cfg(uri, store="both"), bridge_corpus(), encoder=encoder, show_progress=False
    )
    return uri, retriever


def ids(results):
    return [[h.id for h in hits] for hits in results]


@pytest.mark.numerics
def test_dense_search_equals_faiss_flat_with_the_same_encoder(filled, encoder):
    _, milvus = filled
    faiss = build_retriever(RetrieverConfig(), bridge_corpus(), encoder=encoder, show_progress=False)
    got, want = milvus.search(QUERIES, 4), faiss.search(QUERIES, 4)
    assert ids(got) == ids(want)
    assert ids(got)[0][:2] == ["alpha", "bob"] and ids(got)[3] == []
    for a, b in zip(got, want, strict=True):
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
    # The chunk comes back whole from the collection's fields: no corpus is consulted.
    assert got[0][0].chunk == bridge_corpus().get("alpha")
    assert not hasattr(milvus, "corpus")


def test_bm25_scores_are_positive_best_first_and_match_bm25s(filled, encoder):
    uri, _ = filled
    # `index` again with a BM25-only search finds the (complete, dense + BM25) collection and opens it.
    bm25 = build_retriever(
        milvus_cfg(uri, search="bm25"), bridge_corpus(), encoder=encoder, show_progress=False
    )
    assert bm25.meta["store"] == "both" and bm25.cfg.milvus.search == "bm25"
    got = bm25.search(QUERIES, 6)
    # Milvus Lite reports BM25 as a negative distance, smallest first; hits are larger-is-better.
    for hits in got:
        scores = [h.score for h in hits]
        assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    assert ids(got)[1][0] == "bob" and ids(got)[2][0] == "carla"
    # An empty query and a stop-word-only query get no hits, as on the bm25s backend.
    assert got[3] == [] and got[4] == []
    # Same analyzer (no stemmer, same stop words), same k1/b: the same chunks in the same order as
    # bm25s. The scores differ: Milvus keeps the (k1 + 1) factor that bm25s's Lucene variant drops.
    plain = build_retriever(
        RetrieverConfig(kind="bm25", bm25_stemmer="none"), bridge_corpus(), show_progress=False
    )
    for q in ("Bob Stone", "Carla Moss Lyon", "film directed", ALPHA_QUESTION):
        mine, theirs = bm25.search([q], 6)[0], plain.search([q], 6)[0]
        assert [h.id for h in mine] == [h.id for h in theirs], q
        assert all(a.score > b.score for a, b in zip(mine, theirs, strict=True))


def test_hybrid_fuses_both_routes_by_reciprocal_rank(filled, encoder):
    uri, _ = filled
    hybrid = load_retriever(milvus_cfg(uri, search="hybrid", rrf_k=60), None, encoder=encoder)
    got = hybrid.search(QUERIES[:3], 3)
    assert ids(got)[0][0] == "alpha" and ids(got)[1][0] == "bob" and ids(got)[2][0] == "carla"
    # First in both routes: 1/61 + 1/61.
    assert got[1][0].score == pytest.approx(2 / 61, rel=1e-4)


@pytest.mark.numerics
def test_batch_search_equals_one_query_at_a_time(filled, encoder):
    uri, _ = filled
    for mode in ("dense", "bm25", "hybrid"):
        r = load_retriever(milvus_cfg(uri, search=mode, search_batch_size=3), None, encoder=encoder)
        many = [f"{w} film" for w in ("Alpha", "Bob", "Omega", "Carla", "Lyon")] + ["", "Paris"]
        batched = r.search(many, 3)
        single = [r.search([q], 3)[0] for q in many]
        assert ids(batched) == ids(single), mode


def test_reopening_for_another_corpus_or_encoder_stops_and_rebuild_refills(tmp_path, encoder):
    uri = tmp_path / "m.db"
    cfg = milvus_cfg(uri, search="bm25")
    build_retriever(cfg, bridge_corpus(), show_progress=False)
    other = Corpus([*bridge_corpus(), Chunk("extra", "Extra", "One more chunk.")])
    with pytest.raises(IndexMismatchError, match=r"corpus_size=.*'6'.*'7'.*--rebuild"):
        build_retriever(cfg, other, show_progress=False)
    with pytest.raises(IndexMismatchError, match="bm25_k1"):
        build_retriever(RetrieverConfig(kind="milvus", bm25_k1=2.0, milvus=cfg.milvus), bridge_corpus())
    rebuilt = build_retriever(cfg, other, rebuild=True, show_progress=False)
    assert rebuilt.meta["rows"] == 7 and rebuilt.search(["one more chunk"], 1)[0][0].id == "extra"


def test_wrong_dimension_of_a_users_own_collection(tmp_path, encoder):
    from pymilvus import DataType, MilvusClient

    uri = tmp_path / "own.db"
    client = MilvusClient(str(uri))
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("title", DataType.VARCHAR, max_length=64)
    schema.add_field("contents", DataType.VARCHAR, max_length=256)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=8)
    index = client.prepare_index_params()
    index.add_index("dense", index_type="FLAT", metric_type="IP")
    client.create_collection("docs", schema=schema, index_params=index)
    client.insert("docs", [{"id": "a", "title": "A", "contents": "A: x", "dense": [1.0] + [0.0] * 7}])
    with pytest.raises(IndexMismatchError, match=r"dim=8.*dim=384") as err:
        load_retriever(milvus_cfg(uri, collection="docs"), None, encoder=encoder)
    assert "\n" not in str(err.value)
    with pytest.raises(IndexMismatchError, match="a field 'sparse'"):
        load_retriever(milvus_cfg(uri, collection="docs", search="bm25"), None)


def test_text_over_the_varchar_limit_stops_before_any_row(tmp_path):
    uri = tmp_path / "long.db"
    # 60 characters but 120 bytes: a server counts bytes, so the check does too.
    corpus = Corpus([Chunk("ok", "T", "short"), Chunk("long", "T", "é" * 60)])
    with pytest.raises(ValueError, match=r"chunk 'long' has a contents of 123 bytes, over .* 100 .*split"):
        build_retriever(milvus_cfg(uri, search="bm25", max_text_bytes=100), corpus, show_progress=False)
    from pymilvus import MilvusClient

    assert not MilvusClient(str(uri)).has_collection("efficientrag")


def test_missing_collection_and_missing_file(filled, tmp_path):
    uri, _ = filled
    with pytest.raises(
        IndexNotFoundError, match=r"collection 'nope'.*no such collection.*efficientrag index"
    ):
        load_retriever(milvus_cfg(uri, collection="nope", search="bm25"), None)
    with pytest.raises(IndexNotFoundError, match="no Milvus Lite database there"):
        load_retriever(milvus_cfg(tmp_path / "absent.db", search="bm25"), None)


def test_unreachable_server_names_the_uri():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    with pytest.raises(
        BackendUnavailableError, match=rf"cannot reach Milvus at {uri} .*retriever.milvus.uri"
    ) as err:
        load_retriever(milvus_cfg(uri, timeout_s=2, search="bm25"), None)
    assert "\n" not in str(err.value)


def test_missing_milvus_lite_names_the_pip_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "milvus_lite", None)  # as if the package were not installed
    with pytest.raises(
        BackendUnavailableError, match=r"needs the milvus-lite package: pip install 'efficientrag\[milvus\]'"
    ):
        build_retriever(milvus_cfg(tmp_path / "x.db", search="bm25"), bridge_corpus(), show_progress=False)


@pytest.fixture
def unwritable_dir(tmp_path):
    """A real folder this process cannot write: mode 0o555 for a user; for root, who ignores mode
    bits, the immutable attribute (``chattr +i``)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("root, and chattr +i does not work here: no folder that root cannot write")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_an_unwritable_lite_folder_is_named_not_blamed_on_another_process(unwritable_dir):
    for uri in (unwritable_dir / "x.db", unwritable_dir / "new" / "x.db"):
        with pytest.raises(BackendUnavailableError) as err:
            build_retriever(milvus_cfg(uri, search="bm25"), bridge_corpus(), show_progress=False)
        msg = str(err.value)
        assert msg.startswith(
            f"cannot open the Milvus Lite database {uri}: cannot write in {unwritable_dir} ("
        )
        assert "another process" not in msg and "\n" not in msg
    assert list(unwritable_dir.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_lite_uri_on_a_virtual_file_system_says_so_not_no_such_file():
    """Issue 48: /proc/x.db read "cannot write in /proc (No such file or directory)"."""
    for uri in ("/proc/efficientrag-test.db", "/proc/efficientrag-test/x.db"):
        with pytest.raises(BackendUnavailableError) as err:
            build_retriever(milvus_cfg(uri, search="bm25"), bridge_corpus(), show_progress=False)
        assert str(err.value) == (
            f"cannot open the Milvus Lite database {uri}: cannot write in /proc (a virtual file system: "
            "it takes no new files); set retriever.milvus.uri (or the index folder) to a path under a "
            "writable folder"
        )


def test_a_lite_uri_under_a_file_or_on_a_file_says_which_file(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    with pytest.raises(BackendUnavailableError, match=rf"{re.escape(str(a_file))} is a file, not a folder"):
        build_retriever(milvus_cfg(a_file / "x.db", search="bm25"), bridge_corpus(), show_progress=False)
    old = tmp_path / "old.db"  # e.g. a milvus-lite 2.x file: milvus-lite 3 keeps a folder there
    old.write_bytes(b"SQLite format 3\0")
    for open_it in (
        lambda: build_retriever(milvus_cfg(old, search="bm25"), bridge_corpus(), show_progress=False),
        lambda: load_retriever(milvus_cfg(old, search="bm25"), None),
    ):
        with pytest.raises(BackendUnavailableError, match=rf"database {re.escape(str(old))}: it is a file"):
            open_it()


def test_a_lite_file_open_in_another_process_says_so(tmp_path):
    uri = tmp_path / "held.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from pymilvus import MilvusClient; MilvusClient({str(uri)!r}); print('held', flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(BackendUnavailableError) as err:
            build_retriever(milvus_cfg(uri, search="bm25"), bridge_corpus(), show_progress=False)
    finally:
        holder.communicate("\n", timeout=60)
    assert str(err.value) == (
        f"cannot open the Milvus Lite database {uri}: another process has it open; Milvus Lite serves "
        "one process per file: stop the other process using it, or use a Milvus server for shared access"
    )


def test_bm25_needs_a_server_of_2_5_and_milvus_lite_passes(filled):
    from efficientrag.retrieval.milvus.version import check_full_text, parse_version, server_version

    _, retriever = filled
    lite = server_version(retriever.client, 5.0)
    assert lite is not None and lite.startswith("milvus_lite-") and parse_version(lite) is None
    check_full_text(MilvusConfig(search="hybrid"), "x.db", lite)  # Milvus Lite 3 has BM25
    assert parse_version("v2.3.5-lite") == (2, 3) and parse_version("2.5.4") == (2, 5)
    uri = "http://127.0.0.1:19530"
    for search in ("bm25", "hybrid"):
        with pytest.raises(BackendUnavailableError) as err:
            check_full_text(MilvusConfig(search=search), uri, "v2.4.9")
        assert str(err.value) == (
            f"Milvus server at {uri} is v2.4.9; search: bm25 and hybrid need Milvus >= 2.5 (full-text "
            "search); `search: dense` works on this server"
        )
    with pytest.raises(BackendUnavailableError, match="works on this server with store: dense"):
        check_full_text(MilvusConfig(store="both"), uri, "v2.3.5")
    for ok in ("v2.5.0", "2.6.1", "Zilliz Cloud (Compatible with Milvus 2.5)", None, "unknown"):
        check_full_text(MilvusConfig(search="bm25"), uri, ok)
    check_full_text(MilvusConfig(search="dense"), uri, "v2.3.5")


def test_config_rejects_a_store_the_search_cannot_use():
    with pytest.raises(ValueError, match="needs store='both', got 'dense'"):
        MilvusConfig(search="hybrid", store="dense")
    assert MilvusConfig(search="hybrid").stored == "both" and MilvusConfig().has_bm25 is False


@pytest.mark.numerics
def test_efficientrag_on_milvus_gives_the_in_process_backends_chunks(filled, encoder, saved_minilm_models):
    """Scripted models (exact hop behaviour) and real MiniLM Labeler/Filter with random heads: the
    loop keeps the same chunks on Milvus dense as on FAISS Flat, and on Milvus BM25 as on bm25s
    without a stemmer (on this corpus; docs/backends.md lists where the two BM25s differ)."""
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.testing.scripted_models import (
        OMEGA_QUESTION,
        USEFUL_WORDS,
        InfoOnlyFilter,
        ScriptedLabeler,
    )

    uri, milvus_dense = filled
    pairs = {
        "dense": (
            build_retriever(RetrieverConfig(), bridge_corpus(), encoder=encoder, show_progress=False),
            milvus_dense,
        ),
        "bm25": (
            build_retriever(
                RetrieverConfig(kind="bm25", bm25_stemmer="none"), bridge_corpus(), show_progress=False
            ),
            load_retriever(milvus_cfg(uri, search="bm25", store="both"), None),
        ),
    }
    cfg = EfficientRAGConfig(
        top_k=3, max_hops=3, tag_threshold=0.3, token_threshold=0.3, filter_threshold=0.3
    )
    models = {
        "scripted": (ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter()),
        "minilm": (
            Labeler.from_pretrained(saved_minilm_models / "labeler", device="cpu"),
            Filter.from_pretrained(saved_minilm_models / "filter", device="cpu"),
        ),
    }
    questions = [ALPHA_QUESTION, OMEGA_QUESTION, "Where is Paris?"]
    for kind, (local, milvus) in pairs.items():
        for name, (lab, fil) in models.items():
            if (kind, name) == ("bm25", "minilm"):
                continue  # the loop's code path is the same; one real-model run is enough
            want = EfficientRAG(local, lab, fil, cfg).retrieve_batch(questions)
            got = EfficientRAG(milvus, lab, fil, cfg).retrieve_batch(questions)
            assert [r.chunk_ids for r in got] == [r.chunk_ids for r in want], (kind, name)
            assert [len(r.trace) for r in got] == [len(r.trace) for r in want], (kind, name)
    scripted = EfficientRAG(milvus_dense, *models["scripted"], cfg).retrieve(ALPHA_QUESTION)
    assert set(scripted.chunk_ids) == {"alpha", "bob"}


def test_a_staged_batch_is_used_only_for_the_same_ids(tmp_path):
    import numpy as np

    from efficientrag.retrieval.milvus.index import read_staged, write_staged

    path = tmp_path / "c.pending.npz"
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    write_staged(path, ["a", "b"], vectors)
    assert np.array_equal(read_staged(path, ["a", "b"]), vectors)
    assert read_staged(path, ["b", "a"]) is None and read_staged(path, ["a"]) is None
    path.write_bytes(b"torn")
    assert read_staged(path, ["a", "b"]) is None


def test_a_dense_fill_warns_about_chunks_over_the_encoders_limit(tmp_path, minilm_path, caplog):
    """As the FAISS build: a chunk the encoder cuts is said once, with its id, before the fill."""
    import logging

    from efficientrag.retrieval.encoder import Encoder

    long_text = " ".join(f"word{i}" for i in range(60))
    corpus = Corpus([*bridge_corpus(), Chunk("long0", "Long", long_text)])
    short = Encoder(minilm_path, max_length=32, show_progress=False)
    with caplog.at_level(logging.WARNING, logger="efficientrag.retrieval.encoder"):
        build_retriever(milvus_cfg(tmp_path / "m.db"), corpus, encoder=short, show_progress=False)
    [warning] = [r.getMessage() for r in caplog.records if "encoder's limit" in r.getMessage()]
    assert warning.startswith("1 of 7 chunks are longer than the encoder's limit of 32 tokens")
    assert "'long0'" in warning
