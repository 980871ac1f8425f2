"""A request body that is not UTF-8 is refused like every other bad request: a 4xx whose reply
names its ``field`` (issue 48: FastAPI's own 400, "There was an error parsing the body", had none).
The app runs in process behind its gate (httpx's ASGI transport); no request reaches the loop."""

from __future__ import annotations

import asyncio

import httpx
import pytest

pytest.importorskip("fastapi")

from efficientrag.data.corpus import Corpus  # noqa: E402
from efficientrag.pipeline.config import EfficientRAGConfig  # noqa: E402
from efficientrag.pipeline.efficientrag import EfficientRAG  # noqa: E402
from efficientrag.retrieval.config import RetrieverConfig  # noqa: E402
from efficientrag.retrieval.factory import build_retriever  # noqa: E402
from efficientrag.serve.app import create_app  # noqa: E402
from efficientrag.serve.config import ServeConfig  # noqa: E402
from tests.serve.serve_harness import build_tiny_models, write_corpus  # noqa: E402

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-bad-body")
    models = build_tiny_models(root / "models")
    corpus = Corpus.load(write_corpus(root / "corpus.jsonl"))
    retriever = build_retriever(RetrieverConfig(kind="bm25"), corpus, root / "index", show_progress=False)
    rag = EfficientRAG.from_config(
        retriever, EfficientRAGConfig(labeler=models["labeler"], filter=models["filter"])
    )
    return create_app(rag, ServeConfig(), backend="bm25")


def post(app, path: str, body: bytes) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, content=body, headers=JSON)

    return asyncio.run(send())


@pytest.mark.parametrize("path", ["/v1/retrieve", "/retrieve"])
def test_a_body_that_is_not_utf8_is_a_400_naming_the_body_and_the_byte(app, path):
    reply = post(app, path, b'{"question": "Wh\xff?"}')
    assert reply.status_code == 400
    assert reply.json() == {
        "detail": "body: not UTF-8: byte 0xff at byte offset 16 (invalid start byte); send the JSON body "
        "encoded as UTF-8",
        "field": "body",
    }
    latin1 = "Où est né le réalisateur ?".encode("latin-1")
    reply = post(app, path, b'{"queries": ["' + latin1 + b'"]}')
    assert (reply.status_code, reply.json()["field"]) == (400, "body")
    assert reply.json()["detail"].startswith("body: not UTF-8: byte 0xf9 at byte offset 15 ")


def test_utf8_text_passes_the_gate_and_malformed_json_keeps_its_own_error(app):
    # Non-ASCII UTF-8 is read: this body gets as far as the validation of its fields.
    reply = post(app, "/v1/retrieve", '{"questión": "Où?"}'.encode())
    assert (reply.status_code, reply.json()["field"]) == (422, "questión")
    reply = post(app, "/v1/retrieve", b'{"question": ')
    assert (reply.status_code, reply.json()["field"]) == (400, "body")
    assert reply.json()["detail"].startswith("body: malformed JSON")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/retrieve", b'{"question": "\\ud800"}', "question"),
        ("/v1/retrieve", b'{"questions": ["Who?", "Wh\\udc00o?"]}', "questions[1]"),
        ("/retrieve", b'{"queries": ["Who?", "\\ud800"]}', "queries[1]"),
    ],
)
def test_a_lone_surrogate_is_a_422_naming_its_field(app, path, body, field):
    reply = post(app, path, body)  # valid JSON: the escape decodes to a lone surrogate
    assert reply.status_code == 422
    assert reply.json()["field"] == field
    assert "lone surrogate" in reply.json()["detail"]


def test_a_question_of_zero_width_characters_is_empty(app):
    reply = post(app, "/v1/retrieve", '{"question": "\u200b\ufeff "}'.encode())
    assert (reply.status_code, reply.json()["field"]) == (422, "question")
    assert "empty" in reply.json()["detail"]
    reply = post(app, "/retrieve", '{"queries": ["\u200b"]}'.encode())
    assert reply.status_code == 200 and reply.json()["result"] == [[]]
