"""The shapes the server replies with: ``/v1/retrieve``, the Search-R1 ``/retrieve`` and the MCP tool.

Declared once here: the routers name them as their response models (so the OpenAPI schema, the page
and ``RemoteEfficientRAG`` read one shape), and the MCP tool returns the same kept-chunk model, so a
field added to a chunk reaches every reply or none. The dicts ``serve.wire`` builds are validated
into these on the way out; a key that is not declared here is refused there, not dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Reply(BaseModel):
    """A reply model: every key declared (an undeclared one is an error, not silently dropped)."""

    model_config = ConfigDict(extra="forbid")


class KeptChunk(Reply):
    """One chunk the loop kept for a question."""

    id: str
    title: str
    text: str
    score: float = Field(description="the Labeler's Continue probability")
    hop: int | None = Field(description="the hop (0-based) whose query kept it")
    query: str | None = Field(description="the query that kept it")


class RetrieveResult(Reply):
    """One question's result in ``/v1/retrieve``; ``trace`` and ``documents`` only when asked."""

    question: str
    chunks: list[KeptChunk]
    counters: dict[str, float]
    trace: list[dict[str, Any]] | None = Field(default=None, description="every hop (trace: true)")
    documents: dict[str, dict[str, str]] | None = Field(
        default=None, description="title and text of the hits not kept (trace: true)"
    )


class RetrieveReply(Reply):
    """``POST /v1/retrieve``: one result per question, in order."""

    results: list[RetrieveResult]


class SearchR1Document(Reply):
    """A document as Search-R1's retrieval server sends it: ``contents`` is the corpus row's own."""

    id: str
    contents: str


class ScoredDocument(Reply):
    """A document with its score (``return_scores``)."""

    document: SearchR1Document
    score: float


class SearchR1Reply(Reply):
    """``POST /retrieve``: one list per query, in order (empty for an empty query)."""

    result: list[list[SearchR1Document] | list[ScoredDocument]]


class ToolResult(Reply):
    """The MCP tool's reply: what ``/v1/retrieve`` gives for the question, without counters."""

    question: str
    chunks: list[KeptChunk]
