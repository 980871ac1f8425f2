"""The reply shapes are declared once (``serve.replies``): the routers answer with them, the MCP tool
returns the same chunk model, and what ``serve.wire`` builds validates into them with nothing left
over, so a field added on one side and not the other fails here."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from pydantic import ValidationError  # noqa: E402

from efficientrag.pipeline.config import EfficientRAGConfig  # noqa: E402
from efficientrag.pipeline.efficientrag import EfficientRAG  # noqa: E402
from efficientrag.serve import replies  # noqa: E402
from efficientrag.serve.routers import retrieval, search_r1  # noqa: E402
from efficientrag.serve.wire import result_to_json, search_r1_json  # noqa: E402
from efficientrag.testing.scripted_models import (  # noqa: E402
    ALPHA_QUESTION,
    STOPWORDS,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.word_overlap import WordOverlapRetriever  # noqa: E402


@pytest.fixture(scope="module")
def result():
    retriever = WordOverlapRetriever(bridge_corpus(), STOPWORDS)
    rag = EfficientRAG(
        retriever, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), EfficientRAGConfig(top_k=3, floor_k=1)
    )
    return rag.retrieve(ALPHA_QUESTION)


def test_the_routers_answer_with_the_declared_models():
    (v1,) = [r for r in retrieval.router.routes if r.path == "/v1/retrieve"]
    (r1,) = [r for r in search_r1.router.routes if r.path == "/retrieve"]
    assert v1.response_model is replies.RetrieveReply and v1.response_model_exclude_unset
    assert r1.response_model is replies.SearchR1Reply
    # The MCP tool's chunks are /v1/retrieve's chunks: one model.
    assert replies.ToolResult.model_fields["chunks"].annotation == list[replies.KeptChunk]
    assert replies.RetrieveResult.model_fields["chunks"].annotation == list[replies.KeptChunk]


@pytest.mark.parametrize("trace", [False, True])
def test_what_the_wire_builds_is_exactly_the_declared_shape(result, trace):
    row = result_to_json(result, trace=trace)
    parsed = replies.RetrieveResult.model_validate(row)
    assert parsed.model_dump(exclude_unset=True) == row
    assert set(row["chunks"][0]) == set(replies.KeptChunk.model_fields)
    assert ("trace" in row) == trace
    with pytest.raises(ValidationError, match="extra"):
        replies.RetrieveResult.model_validate({**row, "chunks": [{**row["chunks"][0], "rank": 1}]})
    for scores in (False, True):
        docs = search_r1_json(result, return_scores=scores, contents=lambda c: f"{c.title}\n{c.text}")
        assert replies.SearchR1Reply.model_validate({"result": [docs, []]}).model_dump() == {
            "result": [docs, []]
        }
