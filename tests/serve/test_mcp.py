"""The MCP endpoint on the same app (issue 50), driven by the ``mcp`` SDK's own client over a real
uvicorn server: the ``retrieve`` tool gives what ``/v1/retrieve`` gives, behind the same token and
the same checks."""

from __future__ import annotations

import asyncio

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from efficientrag.testing.float_noise import assert_same_up_to_float_noise  # noqa: E402
from tests.serve.serve_harness import Server, harness_argv, harness_client, searched  # noqa: E402

TOKEN = "mcp-test-token"
QUESTIONS = ["Where was the director of Film 3 born?", "Who directed Film 7?", "Where was Person 2 born?"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-mcp")
    argv, control = harness_argv(root, "--floor-k", "2", "access_log=false")
    server = Server(argv, root / "server.log", env={"EFFICIENTRAG_API_KEY": TOKEN})
    with harness_client(server, control, TOKEN) as client:
        yield server, client, control


async def with_session(url: str, token: str | None, work):
    """``work(session)`` in an initialized MCP session over streamable HTTP (the SDK's client)."""
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


def test_the_retrieve_tool_returns_what_v1_retrieve_returns(served):
    server, client, _ = served

    async def work(session):
        tools = (await session.list_tools()).tools
        calls = [await session.call_tool("retrieve", {"question": q}) for q in QUESTIONS]
        return tools, calls

    tools, calls = asyncio.run(with_session(server.url, TOKEN, work))
    assert [t.name for t in tools] == ["retrieve"] and tools[0].input_schema["required"] == ["question"]
    api = client.post("/v1/retrieve", json={"questions": QUESTIONS}).json()["results"]
    assert not any(c.is_error for c in calls)
    got = [c.structured_content for c in calls]
    assert_same_up_to_float_noise(got, [{"question": r["question"], "chunks": r["chunks"]} for r in api])
    assert all(row["chunks"] for row in got)  # floor_k=2: something to compare in every reply
    assert set(got[0]["chunks"][0]) == {"id", "title", "text", "score", "hop", "query"}


def test_the_mcp_endpoint_needs_the_token(served):
    server, _, _ = served
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        reply = httpx.post(f"{server.url}/mcp", json=hello, headers=headers, timeout=60)
        assert reply.status_code == 401 and reply.json()["field"] == "authorization"


def test_a_bad_question_is_the_tools_error_naming_the_field_and_never_reaches_the_loop(served):
    server, client, control = served
    long = "Who is " + " ".join(["word"] * 300) + "?"

    async def work(session):
        return [await session.call_tool("retrieve", {"question": q}) for q in ("  ", long)]

    before = len(searched(control))
    empty, too_long = asyncio.run(with_session(server.url, TOKEN, work))
    assert empty.is_error and "422: question: the question is empty" in empty.content[0].text
    assert too_long.is_error and "longer than the Labeler reads" in too_long.content[0].text
    assert len(searched(control)) == before
    assert client.get("/healthz").status_code == 200


def test_an_unknown_argument_is_the_tools_error_naming_it(served):
    server, client, control = served

    async def work(session):
        tools = (await session.list_tools()).tools
        call = await session.call_tool(
            "retrieve", {"question": QUESTIONS[0], "settings": {"labeler": "/etc"}}
        )
        return tools, call

    before = len(searched(control))
    tools, call = asyncio.run(with_session(server.url, TOKEN, work))
    assert set(tools[0].input_schema["properties"]) == {"question"}  # the context is not an argument
    assert call.is_error and "422: settings: unknown argument" in call.content[0].text
    assert len(searched(control)) == before
