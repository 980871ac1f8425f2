"""DSPy retrievers as the loop's search, with real DSPy objects built here: dspy.retrievers
EmbeddingsWithScores over the packaged MiniLM gives the same chunks and scores as the package's own
FAISS Flat index with that encoder and steers the loop to the same result; a dspy.Retrieve subclass
gets k per call; DSPy's own test retriever (dummy_rm) works through id_map; errors are one line."""

from __future__ import annotations

import asyncio
import importlib
import sys

import pytest

pytest.importorskip("dspy", reason="needs the dspy extra")

import dspy  # noqa: E402
from dspy.dsp.utils import dotdict  # noqa: E402
from dspy.utils import dummy_rm  # noqa: E402

from efficientrag.pipeline.config import EfficientRAGConfig  # noqa: E402
from efficientrag.pipeline.efficientrag import EfficientRAG  # noqa: E402
from efficientrag.retrieval.dspy_search import DSPySearch  # noqa: E402
from efficientrag.retrieval.framework import MissingChunkIdError  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)

QUERIES = [ALPHA_QUESTION, "Bob Stone", "", "Carla Moss"]
CORPUS_IDS = [c.id for c in bridge_corpus()]


def embeddings(encoder) -> dspy.retrievers.EmbeddingsWithScores:
    """DSPy's local vector search over the chunks' contents, embedded by the MiniLM encoder."""

    def embed(texts: list[str]):
        return encoder.encode_passages(texts, show_progress=False)

    return dspy.retrievers.EmbeddingsWithScores(
        corpus=[c.contents for c in bridge_corpus()], embedder=embed, k=4
    )


def ids(results):
    return [[h.id for h in hits] for hits in results]


@pytest.mark.numerics
def test_dspy_embeddings_give_faiss_flat_chunks_and_scores(encoder, faiss):
    search = DSPySearch(embeddings(encoder), id_key="index", id_map=CORPUS_IDS)
    got, want = search.search(QUERIES, 3), faiss.search(QUERIES, 3)
    assert ids(got) == ids(want)
    assert [h.score for h in got[1]] == pytest.approx([h.score for h in want[1]], abs=1e-5)
    # Embeddings returns its passages without titles: the stored text is the chunk's contents.
    assert got[0][0].chunk.contents == bridge_corpus().get("alpha").contents
    assert [len(h) for h in search.search(QUERIES, 5)] == [5, 5, 0, 5]  # k set on the retriever
    assert ids(asyncio.run(search.asearch(QUERIES, 3))) == ids(got)


@pytest.mark.numerics
def test_efficientrag_on_dspy_embeddings_equals_faiss(encoder, faiss):
    search = DSPySearch(embeddings(encoder), id_key="index", id_map=CORPUS_IDS)
    cfg = EfficientRAGConfig(top_k=3, max_hops=3)
    runs = [
        EfficientRAG(r, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), cfg).retrieve_batch(
            [ALPHA_QUESTION, OMEGA_QUESTION]
        )
        for r in (faiss, search)
    ]
    assert [r.chunk_ids for r in runs[1]] == [r.chunk_ids for r in runs[0]]
    assert set(runs[1][0].chunk_ids) == {"alpha", "bob"}


class KeywordRM(dspy.Retrieve):
    """A DSPy retriever module in the style of DSPy's own RMs: dotdicts with long_text, id, title."""

    def forward(self, query: str, k: int | None = None):
        words = set(query.lower().split())
        scored = [(len(words & set(c.contents.lower().split())), c) for c in bridge_corpus()]
        ranked = [c for s, c in sorted(scored, key=lambda x: -x[0]) if s > 0]
        return [dotdict(long_text=c.contents, id=c.id, title=c.title) for c in ranked[: k or self.k]]


def test_a_dspy_retrieve_module_gets_k_per_call_and_its_titles():
    retriever = KeywordRM(k=1)
    search = DSPySearch(retriever)
    hits = search.search(["film directed by"], 4)[0]
    assert len(hits) == 3 and retriever.k == 1  # three chunks share a word; the user's k is kept
    assert hits[0].chunk == bridge_corpus().get("alpha") and [h.score for h in hits] == [1.0, 0.5, 1 / 3]


def test_dspy_dummy_rm_maps_its_passages_to_ids():
    rm = dummy_rm([c.contents for c in bridge_corpus()])
    search = DSPySearch(rm, id_key="long_text", id_map={c.contents: c.id for c in bridge_corpus()})
    hits = search.search(["Carla Moss was born in Lyon."], 2)[0]
    assert hits[0].id == "carla" and len(hits) == 2


def test_missing_id_and_bad_input_are_one_line(encoder):
    with pytest.raises(MissingChunkIdError) as info:
        DSPySearch(embeddings(encoder)).search(["Bob Stone"], 2)
    assert str(info.value) == (
        "DSPy result for query 'Bob Stone' has no metadata 'id' (its keys: ['index', 'long_text', 'score']); "
        "set id_key to the key holding your chunk ids, or add them to the documents' metadata when you index them"
    )
    with pytest.raises(MissingChunkIdError, match=r"^DSPy result has index \d, which id_map \(of 2 ids\)"):
        DSPySearch(embeddings(encoder), id_key="index", id_map=["a", "b"]).search(["Paris"], 6)
    with pytest.raises(TypeError, match="takes a DSPy retriever.*got list"):
        DSPySearch([])
    with pytest.raises(TypeError, match=r"is a str; expected a dspy.Prediction"):
        DSPySearch(lambda q: "one passage").search(["x"], 1)
    with pytest.raises(ValueError, match="needs an id_key"):
        DSPySearch(KeywordRM(), id_key="")


def test_missing_dspy_is_one_line_naming_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "dspy" or m.startswith("dspy.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "dspy", None)
    module = importlib.import_module("efficientrag.retrieval.dspy_search")
    with pytest.raises(ImportError) as info:
        module.DSPySearch(lambda q: [])
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("DSPySearch needs dspy (")
    assert str(info.value).endswith("pip install 'efficientrag[dspy]'")
