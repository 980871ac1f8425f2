"""What a request may ask, and the checks that refuse the rest before it is queued.

A bad question must not fail the other callers' questions in its batch, so everything that can be
checked alone is checked here, before the queue: the body's shape (pydantic, through FastAPI), the
number of questions, empty questions (the library's ``check_questions``), questions longer than the
Labeler reads (the library's own truncation rule, asked of its tokenizer), and the settings, which
come from an allow-list and go through ``EfficientRAGConfig``'s own checks.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from efficientrag.config_values import attribute_docs
from efficientrag.errors import EfficientRAGError
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.pipeline.inputs import check_questions
from efficientrag.serve.config import ALLOWED_SETTINGS, ServeConfig
from efficientrag.serve.errors import RequestError
from efficientrag.setting_fields import SettingError, schema_bounds
from efficientrag.text.validity import text_problem
from efficientrag.text.words import split_words


def _loop_settings_model() -> type[BaseModel]:
    """The request's loop settings, derived from ``EfficientRAGConfig``: each allowed setting with the
    config's own type (unset: the server's value) and its description. The ranges are the config's
    own, checked once, when the request's config is built (:func:`settings_config`); the schema
    shows them."""
    hints = typing.get_type_hints(EfficientRAGConfig)
    docs = attribute_docs(EfficientRAGConfig)
    fields: dict[str, Any] = {
        name: (
            hints[name] | None,
            Field(
                None, description=docs.get(name), json_schema_extra=schema_bounds(EfficientRAGConfig, name)
            ),
        )
        for name in ALLOWED_SETTINGS
    }
    return create_model(
        "LoopSettings",
        __config__=ConfigDict(extra="forbid", strict=True),
        __doc__="Per-request settings of the loop (unset: the server's). Nothing here names a file, a "
        "model or a backend.",
        **fields,
    )


LoopSettings = _loop_settings_model()


class RetrieveRequest(BaseModel):
    """``POST /v1/retrieve``: ``question`` (one) or ``questions`` (a list)."""

    model_config = ConfigDict(extra="forbid")

    question: str | None = None
    questions: list[str] | None = None
    settings: LoopSettings = Field(default_factory=LoopSettings)
    trace: bool = Field(False, description="add each question's per-hop trace to its result")
    deadline_ms: int | None = Field(None, ge=1, description="answer within this many ms or get 503/504")


class SearchR1Request(BaseModel):
    """``POST /retrieve`` in the Search-R1 / FlashRAG retrieval-server shape: a rollout's whole batch
    of queries; an empty one (an empty ``<search></search>``) gets an empty list."""

    model_config = ConfigDict(extra="forbid")

    queries: list[str]
    topk: int | None = Field(None, ge=1, description="at most this many chunks per query (chunk_budget)")
    return_scores: bool = False
    deadline_ms: int | None = Field(None, ge=1, description="answer within this many ms or get 503/504")


# The header that carries a caller's deadline when its body cannot: Envoy (and so Istio and most
# service meshes built on it) sets it on every request it forwards, to the route's timeout, and a
# client may send it itself. Milliseconds, as an integer.
DEADLINE_HEADER = "x-envoy-expected-rq-timeout-ms"


def request_deadline_s(
    cfg: ServeConfig, deadline_ms: int | None, header: str | None, *, default_s: float | None = None
) -> float:
    """Seconds the request may take: the least of ``default_s`` (None: ``serve.deadline_s``), the
    body's ``deadline_ms`` and the deadline header (a header that is not a positive integer is
    refused, naming it). ``math.inf`` when nothing names one and ``default_s`` is ``math.inf``."""
    chosen = [cfg.deadline_s if default_s is None else default_s]
    if deadline_ms is not None:
        chosen.append(deadline_ms / 1000)
    if header is not None:
        value = header.strip()
        if not value.isdigit() or int(value) < 1:
            raise RequestError(
                400, DEADLINE_HEADER, f"expected a whole number of milliseconds >= 1, got {value[:40]!r}"
            )
        chosen.append(int(value) / 1000)
    return min(chosen)


def search_r1_queries(body: SearchR1Request, cfg: ServeConfig) -> list[int]:
    """The positions of the queries to run: every non-blank one (a blank or zero-width-only query
    gets an empty list in its place, as Search-R1's own server would find nothing for it; one that
    is not valid Unicode text is refused, naming it). A query longer than the
    Labeler reads is run on its first words, as Search-R1's server truncates what its encoder
    cannot read: a refusal would fail the whole rollout batch."""
    if not body.queries:
        raise RequestError(422, "queries", "no queries")
    if len(body.queries) > cfg.max_queries:
        raise RequestError(
            422, "queries", f"{len(body.queries)} queries in one request; at most {cfg.max_queries}"
        )
    runs = []
    for i, query in enumerate(body.queries):
        problem = text_problem(query)
        if problem is None:
            runs.append(i)
        elif problem != "empty":  # blank and zero-width-only queries find nothing; this cannot be read
            raise RequestError(422, f"queries[{i}]", problem)
    return runs


def request_questions(body: RetrieveRequest) -> tuple[list[str], list[str]]:
    """The questions of a ``/v1/retrieve`` body with the field each came from."""
    if (body.question is None) == (body.questions is None):
        raise RequestError(422, "question", "give either 'question' (one) or 'questions' (a list)")
    if body.question is not None:
        return [body.question], ["question"]
    assert body.questions is not None
    return list(body.questions), [f"questions[{i}]" for i in range(len(body.questions))]


def check_request_questions(
    rag: EfficientRAG, questions: list[str], fields: list[str], cfg: ServeConfig, *, list_field: str
) -> None:
    """Count, emptiness and length of every question; the first fault is the reply."""
    if not questions:
        raise RequestError(422, list_field, "no questions")
    if len(questions) > cfg.max_questions:
        raise RequestError(
            422, list_field, f"{len(questions)} questions in one request; at most {cfg.max_questions}"
        )
    for question, field in zip(questions, fields, strict=True):
        try:
            check_questions([question], source=field)
        except ValueError as exc:
            raise RequestError(422, field, str(exc).split(": ", 1)[-1]) from None
        cut = words_over_limit(rag, question)
        if cut:
            raise RequestError(
                422,
                field,
                f"the question is longer than the Labeler reads ({labeler_limit(rag)} tokens): its last {cut} "
                "words would be cut; shorten it",
            )


def words_over_limit(rag: EfficientRAG, question: str) -> int:
    """How many of the question's words the Labeler would not see: the library cuts a query that
    leaves no room for its chunk (``encode_words``), and that is asked of the Labeler itself with an
    empty chunk. 0 for a Labeler that cannot say (no ``encode``)."""
    encode = getattr(rag.labeler, "encode", None)
    if encode is None:
        return 0
    encoded = encode([(split_words(question), [])], max_length=rag.config.labeler_max_length)
    return int(getattr(encoded[0], "query_truncated_words", 0) or 0)


def labeler_limit(rag: EfficientRAG) -> Any:
    return rag.config.labeler_max_length or getattr(rag.labeler, "max_length", "?")


def exit_head_problem(labeler: Any) -> str | None:
    """Why the served Labeler cannot let pairs exit early (None: it can): a request asking for
    ``exit_threshold`` is refused on its field, not failed in the batch it would share."""
    early_exit = getattr(labeler, "early_exit", None)
    if not callable(early_exit):
        return "this server's Labeler has no early exit"
    try:
        early_exit()  # loaded once, then held by the Labeler
    except EfficientRAGError as exc:
        return str(exc)
    return None


def settings_config(
    base: EfficientRAGConfig, settings: dict[str, Any], cfg: ServeConfig, *, field: str = "settings"
) -> tuple[tuple[tuple[str, Any], ...], EfficientRAGConfig]:
    """The request's loop config and a hashable key for it (requests batch together only under the
    same key). Caps first, then the config's own consistency checks, each naming the setting."""
    chosen = {k: v for k, v in settings.items() if v is not None}
    caps = {"top_k": cfg.max_top_k, "first_top_k": cfg.max_top_k, "max_hops": cfg.max_hops}
    for name, cap in caps.items():
        if name in chosen and chosen[name] > cap:
            raise RequestError(422, f"{field}.{name}", f"at most {cap} on this server, got {chosen[name]}")
    try:
        config = dataclasses.replace(base, **chosen)
    except SettingError as exc:
        # The config names the settings it refused: where one of them is the request's own, that is
        # the field; a combination the request set several of is the settings as a whole.
        named = [name for name in exc.fields if name in chosen]
        raise RequestError(422, f"{field}.{named[0]}" if len(named) == 1 else field, str(exc)) from None
    return tuple(sorted(chosen.items())), config
