"""``POST /retrieve``: the Search-R1 / FlashRAG retrieval-server shape, behind the token."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Depends, Request

from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.serve.dependencies import AnswererDep, ConfigDep, ContentsDep, DeadlineDep, require_token
from efficientrag.serve.replies import SearchR1Reply
from efficientrag.serve.requests import SearchR1Request, search_r1_queries
from efficientrag.serve.wire import search_r1_json

router = APIRouter(dependencies=[Depends(require_token)])


@router.post("/retrieve", summary="Search-R1 / FlashRAG retrieval-server shape", response_model=SearchR1Reply)
async def retrieve_search_r1(
    body: SearchR1Request,
    request: Request,
    answer: AnswererDep,
    cfg: ConfigDep,
    deadline: DeadlineDep,
    contents: ContentsDep,
) -> dict[str, Any]:
    """``{"queries": [...], "topk": k, "return_scores": bool}`` -> ``{"result": [[doc, ...], ...]}``,
    ``doc`` = ``{"id", "contents"}`` (``{"document": doc, "score": s}`` with scores), ``contents``
    the corpus row's own. A rollout's whole batch at once (``serve.max_queries``); an empty query
    gets an empty list. ``topk`` caps the chunks per query (the loop's ``chunk_budget``). No deadline
    unless the request names one (``deadline_ms`` or the deadline header)."""
    asked = search_r1_queries(body, cfg)
    # Search-R1's client sets no timeout and waits for its rollout's batch however long it takes:
    # a request that names no deadline of its own gets none (never a 504 for work the server did).
    # One that names a deadline is refused at once (503) where admission can tell it cannot be met.
    deadline_s = deadline.seconds(body.deadline_ms, default_s=math.inf)
    settings = {"chunk_budget": body.topk} if body.topk is not None else {}
    found: dict[int, RetrievalResult] = {}
    if asked:
        queries = [body.queries[i] for i in asked]
        results = await answer(queries, settings, deadline_s, request.receive, field="queries")
        found = dict(zip(asked, results, strict=True))
    return {
        "result": [
            search_r1_json(found.get(i), return_scores=body.return_scores, contents=contents)
            for i in range(len(body.queries))
        ]
    }
