"""The JSON of a retrieval result, both ways: what the server sends and what the client rebuilds.

One module for both directions so that a field added on one side cannot be forgotten on the other:
``RemoteEfficientRAG`` returns the same ``RetrievalResult`` (chunks, scores, typed trace, counters)
as the library, equal to it except for the trace's timings. JSON turns the trace's integer keys
(``truncated_query_words``) into strings; ``result_from_json`` turns them back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from efficientrag.data.schema import Chunk
from efficientrag.errors import InvalidArgumentError
from efficientrag.pipeline.adapters import kept_chunks
from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.pipeline.trace import HitRecord, Hop, trace_to_dicts


def result_to_json(result: RetrievalResult, *, trace: bool) -> dict[str, Any]:
    """``question``, ``chunks`` (id, title, text, score: the Labeler's Continue probability, hop and
    query that found it), ``counters``, and the per-hop ``trace`` when asked."""
    found = _first_seen(result.trace)
    chunks = []
    for chunk, meta in kept_chunks(result):
        hop, query = meta["hop"], meta["query"]
        if hop is None:  # kept without a Continue tag (floor_k, fill_budget): where it was first seen
            hop, query = found.get(chunk.id, (None, None))
        chunks.append({**chunk.to_dict(), "score": meta["continue_prob"], "hop": hop, "query": query})
    out: dict[str, Any] = {"question": result.question, "chunks": chunks, "counters": result.counters}
    if trace:
        out["trace"] = trace_to_dicts(result.trace)
    return out


def search_r1_json(
    result: RetrievalResult | None, *, return_scores: bool, contents: Callable[[Chunk], str]
) -> list[Any]:
    """One query's list in the Search-R1 retrieval-server shape: documents ``{"id", "contents"}``
    with ``contents`` the corpus row's own (``serve.contents``: ``"title\\ntext"``, quotes and
    all), wrapped with their score when asked: ``{"document": doc, "score": s}``. None (an empty
    query) is an empty list."""
    if result is None:
        return []
    docs = [{"id": c.id, "contents": contents(c)} for c in result.chunks]
    if not return_scores:
        return docs
    return [{"document": d, "score": s} for d, s in zip(docs, result.scores, strict=True)]


def result_from_json(row: Mapping[str, Any], *, where: str = "result") -> RetrievalResult:
    """A ``RetrievalResult`` from ``result_to_json``'s output (the trace is empty when the reply
    carried none)."""
    try:
        chunks = [Chunk(id=c["id"], title=c["title"], text=c["text"]) for c in row["chunks"]]
        scores = [float(c["score"]) for c in row["chunks"]]
        trace = [hop_from_json(h, where=f"{where}.trace[{i}]") for i, h in enumerate(row.get("trace") or [])]
        return RetrievalResult(row["question"], chunks, scores, trace, dict(row.get("counters") or {}))
    except (KeyError, TypeError) as exc:
        raise InvalidArgumentError(
            f"{where}: not an efficientrag result ({type(exc).__name__}: {exc})"
        ) from None


def hop_from_json(row: Mapping[str, Any], *, where: str = "hop") -> Hop:
    return Hop(
        hop=int(row["hop"]),
        queries=list(row["queries"]),
        hits=[
            [HitRecord.from_dict(h, where=f"{where}.hits[{q}][{r}]") for r, h in enumerate(rows)]
            for q, rows in enumerate(row["hits"])
        ],
        next_queries=list(row["next_queries"]),
        timings_s=dict(row["timings_s"]),
        truncated_query_words={int(k): int(v) for k, v in (row.get("truncated_query_words") or {}).items()},
    )


def _first_seen(trace: list[Hop]) -> dict[str, tuple[int, str]]:
    """The first (hop, query) whose hits held each chunk."""
    seen: dict[str, tuple[int, str]] = {}
    for step in trace:
        for query, rows in zip(step.queries, step.hits, strict=True):
            for row in rows:
                seen.setdefault(row.id, (step.hop, query))
    return seen


def hit_documents(result: RetrievalResult, corpus: Any) -> dict[str, dict[str, str]]:
    """Title and text of every hit in the trace that is not among the kept chunks, for the page to
    show what was dropped; empty when the backend keeps no in-process corpus (Milvus)."""
    if corpus is None:
        return {}
    kept = {c.id for c in result.chunks}
    out: dict[str, dict[str, str]] = {}
    for step in result.trace:
        for rows in step.hits:
            for row in rows:
                if row.id not in kept and row.id not in out and row.id in corpus:
                    chunk = corpus.get(row.id)
                    out[row.id] = {"title": chunk.title, "text": chunk.text}
    return out
