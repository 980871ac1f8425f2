"""A Milvus collection opened together with a corpus must have been filled from it (issue 48).

`efficientrag index` refused a collection of another corpus, but `eval` and `retrieve --corpus`
searched it and reported a normal table; a collection of the user's own is allowed only when
``retriever.milvus.foreign_collection`` says so. BM25 collections: no encoder to load.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pymilvus", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")
pytest.importorskip("milvus_lite", reason="needs the milvus extra: pip install 'efficientrag[milvus]'")

from efficientrag.cli import main  # noqa: E402
from efficientrag.data.corpus import Corpus  # noqa: E402
from efficientrag.data.schema import Chunk  # noqa: E402
from efficientrag.retrieval.config import RetrieverConfig  # noqa: E402
from efficientrag.retrieval.errors import CorpusMismatchError, IndexMismatchError  # noqa: E402
from efficientrag.retrieval.factory import build_retriever, load_retriever  # noqa: E402
from efficientrag.retrieval.milvus.config import MilvusConfig  # noqa: E402
from efficientrag.testing.scripted_models import bridge_corpus  # noqa: E402

pytestmark = pytest.mark.milvus

EXTRA = Chunk("extra", "Extra", "One more chunk about Lyon.")


def bm25_cfg(uri, **kw) -> RetrieverConfig:
    return RetrieverConfig(kind="milvus", milvus=MilvusConfig(uri=str(uri), search="bm25", **kw))


@pytest.fixture(scope="module")
def bridge_db(tmp_path_factory):
    """The bridge corpus (6 chunks) in a Lite file, filled by the package."""
    uri = tmp_path_factory.mktemp("milvus-corpus") / "bridge.db"
    build_retriever(bm25_cfg(uri), bridge_corpus(), show_progress=False).close()
    return uri


def test_opening_with_another_corpus_names_both_and_the_switch(bridge_db):
    other = Corpus([*bridge_corpus(), EXTRA])
    with pytest.raises(CorpusMismatchError) as err:
        load_retriever(bm25_cfg(bridge_db), other, corpus_name="own.jsonl")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        f"{bridge_db} collection 'efficientrag' was filled from another corpus (6 chunks,"
    )
    assert f"than own.jsonl (7 chunks, fingerprint {other.fingerprint()[:12]})" in message
    assert "retriever.milvus.foreign_collection=true" in message
    assert isinstance(err.value, IndexMismatchError)  # callers that catch index mismatches catch it

    # The same size with other text is another corpus too.
    edited = Corpus([Chunk(c.id, c.title, c.text + " (edited)") for c in bridge_corpus()])
    with pytest.raises(
        CorpusMismatchError, match=r"\(6 chunks, fingerprint \w+\) than the given corpus \(6 chunks"
    ):
        load_retriever(bm25_cfg(bridge_db), edited)

    # Its own corpus, no corpus at all, or the switch: searched.
    for cfg, corpus in (
        (bm25_cfg(bridge_db), bridge_corpus()),
        (bm25_cfg(bridge_db), None),
        (bm25_cfg(bridge_db, foreign_collection=True), other),
    ):
        retriever = load_retriever(cfg, corpus)
        assert retriever.search(["Bob Stone"], 1)[0][0].id == "bob"
        retriever.close()


def test_a_users_own_collection_with_a_corpus_needs_the_switch(tmp_path):
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    uri = tmp_path / "own.db"
    client = MilvusClient(str(uri))
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("title", DataType.VARCHAR, max_length=64)
    schema.add_field("contents", DataType.VARCHAR, max_length=256, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function("bm25", FunctionType.BM25, ["contents"], ["sparse"]))
    index = client.prepare_index_params()
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection("docs", schema=schema, index_params=index)
    client.insert("docs", [{"id": c.id, "title": c.title, "contents": c.contents} for c in bridge_corpus()])
    client.close()

    with pytest.raises(CorpusMismatchError) as err:
        load_retriever(bm25_cfg(uri, collection="docs"), bridge_corpus(), corpus_name="corpus.jsonl")
    assert str(err.value).startswith(
        f"{uri} collection 'docs' does not record which corpus filled it (it was not filled by "
        "`efficientrag index`), so it cannot be checked against corpus.jsonl (6 chunks, fingerprint "
    )
    assert "foreign_collection=true" in str(err.value)
    own = load_retriever(bm25_cfg(uri, collection="docs", foreign_collection=True), bridge_corpus())
    assert own.search(["Carla Moss"], 1)[0][0].id == "carla"
    own.close()


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    """own.jsonl (the bridge corpus) with its questions, other.jsonl (a larger corpus holding it),
    and k.db filled from other.jsonl by `efficientrag index`."""
    own = write_jsonl(tmp_path / "own.jsonl", [c.to_dict() for c in bridge_corpus()])
    other = write_jsonl(tmp_path / "other.jsonl", [c.to_dict() for c in [*bridge_corpus(), EXTRA]])
    questions = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "q1", "question": "Where was Bob Stone born?", "answers": ["Paris"], "gold_ids": ["bob"]},
            {"id": "q2", "question": "Who directed Omega?", "answers": ["Carla Moss"], "gold_ids": ["omega"]},
        ],
    )
    uri = tmp_path / "k.db"
    milvus = ["retriever.kind=milvus", "retriever.milvus.search=bm25", f"retriever.milvus.uri={uri}"]
    assert main(["index", "--corpus", str(other), "--work-dir", str(tmp_path / "w-other"), *milvus]) == 0
    return {"own": own, "other": other, "questions": questions, "uri": uri, "milvus": milvus, "tmp": tmp_path}


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err.splitlines()[-1]


def test_eval_and_retrieve_refuse_a_collection_of_another_corpus(files, capsys, saved_minilm_models):
    own, uri, milvus, tmp = files["own"], files["uri"], files["milvus"], files["tmp"]
    capsys.readouterr()
    evaluate = ["eval", "--dataset", "jsonl", "--data", str(files["questions"]), "--corpus", str(own)]
    evaluate += ["--work-dir", str(tmp / "w-own"), "--method", "direct_r", *milvus]
    assert main(evaluate) == 2
    err = one_error_line(capsys)
    assert err.startswith(
        f"error: {uri} collection 'efficientrag' was filled from another corpus (7 chunks, "
    )
    assert f"than {own} (6 chunks, " in err and "foreign_collection=true" in err
    assert not (tmp / "w-own" / "eval" / "direct_r" / "summary.json").exists()

    # retrieve --corpus was ignored over a collection: it is checked the same way.
    models = [
        "--labeler",
        str(saved_minilm_models / "labeler"),
        "--filter",
        str(saved_minilm_models / "filter"),
    ]
    ask = ["retrieve", "--corpus", str(own), "--work-dir", str(tmp / "w-ask"), *models, *milvus, "-q", "Who?"]
    assert main(ask) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"error: {uri} collection 'efficientrag' was filled from another corpus")
    assert f"than {own} (6 chunks, " in err

    # Saying the collection is meant to differ lets both run.
    assert main([*evaluate, "retriever.milvus.foreign_collection=true"]) == 0
    summary = json.loads((tmp / "w-own" / "eval" / "direct_r" / "summary.json").read_text())
    assert (summary["num_examples"], summary["num_failed"]) == (2, 0)
    capsys.readouterr()
    assert main([*ask, "retriever.milvus.foreign_collection=true"]) == 0


def test_eval_over_the_collection_of_its_own_corpus_runs(files, capsys):
    tmp = files["tmp"]
    evaluate = [
        "eval",
        "--dataset",
        "jsonl",
        "--data",
        str(files["questions"]),
        "--corpus",
        str(files["other"]),
    ]
    assert main([*evaluate, "--work-dir", str(tmp / "w-same"), "--method", "direct_r", *files["milvus"]]) == 0
    assert "2 questions" in capsys.readouterr().out
