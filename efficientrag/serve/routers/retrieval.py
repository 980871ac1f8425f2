"""``POST /v1/retrieve``: EfficientRAG on one question or a list, behind the token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from efficientrag.serve.dependencies import AnswererDep, ConfigDep, DeadlineDep, require_token
from efficientrag.serve.replies import RetrieveReply
from efficientrag.serve.requests import RetrieveRequest, check_request_questions, request_questions
from efficientrag.serve.wire import hit_documents, result_to_json

router = APIRouter(dependencies=[Depends(require_token)])


@router.post(
    "/v1/retrieve",
    summary="EfficientRAG on one question or a list",
    response_model=RetrieveReply,
    response_model_exclude_unset=True,
)
async def retrieve_v1(
    body: RetrieveRequest, request: Request, answer: AnswererDep, cfg: ConfigDep, deadline: DeadlineDep
) -> dict[str, Any]:
    """``{"question": "..."}`` or ``{"questions": [...]}``, optional ``settings`` (allow-listed loop
    settings), ``trace`` and ``deadline_ms``. Reply: ``{"results": [{"question", "chunks":
    [{"id", "title", "text", "score", "hop", "query"}], "counters", "trace"?}]}``."""
    base = answer.service.base
    questions, fields = request_questions(body)
    list_field = "question" if body.question is not None else "questions"
    check_request_questions(base, questions, fields, cfg, list_field=list_field)
    deadline_s = deadline.seconds(body.deadline_ms)
    results = await answer(
        questions, body.settings.model_dump(), deadline_s, request.receive, field=list_field
    )
    out = []
    for result in results:
        row = result_to_json(result, trace=body.trace)
        if body.trace:
            row["documents"] = hit_documents(result, getattr(base.retriever, "corpus", None))
        out.append(row)
    return {"results": out}
