"""HotpotQA: the original distractor JSON and the IRCoT-processed JSONL, told apart by content.

Distractor records give sentence-level ``supporting_facts``; gold paragraphs are ordered by the
first appearance of their title there (HotpotQA lists the bridge paragraph first in most
records, but it does not promise hop order). IRCoT records only flag ``is_supporting`` per
paragraph, so their gold order is context order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from efficientrag.data.errors import DataFormatError
from efficientrag.data.readers.collect import Parsed, collect
from efficientrag.data.readers.fields import (
    Where,
    check_type,
    chunk_id,
    optional,
    require,
    require_id,
    require_text,
    string_list,
    unique_answers,
)
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import SourceRecord, iter_records, read_text
from efficientrag.data.readers.wiki_context import (
    context_chunks,
    context_paragraphs,
    gold_ids_by_title,
    supporting_titles,
)
from efficientrag.data.schema import Chunk, Example

HotpotFormat = Literal["auto", "distractor", "ircot"]
DATASET = "hotpotqa"


def read_hotpotqa(
    path: str | Path,
    *,
    strict: bool = True,
    limit: int | None = None,
    format: HotpotFormat = "auto",
) -> ReadResult:
    if format not in ("auto", "distractor", "ircot"):
        raise ValueError(f"format must be 'auto', 'distractor' or 'ircot', got {format!r}")
    records = list(iter_records(path, read_text(path)))
    if format == "auto":
        format = detect_hotpotqa_format(path, records)
    parse = parse_distractor if format == "distractor" else parse_ircot
    return collect(DATASET, path, records, parse, strict=strict, limit=limit)


def detect_hotpotqa_format(path: str | Path, records: list[SourceRecord]) -> Literal["distractor", "ircot"]:
    """Decide by the keys of the first readable record, whatever the file is called."""
    first = next((r.obj for r in records if r.obj is not None), None)
    if first is None:
        raise DataFormatError(path, "no readable record to detect the HotpotQA format from")
    if "contexts" in first or "question_text" in first:
        return "ircot"
    if "context" in first or "supporting_facts" in first:
        return "distractor"
    raise DataFormatError(
        path,
        "cannot tell the HotpotQA format: the first record has neither 'context' (original "
        "distractor JSON) nor 'contexts' (IRCoT JSONL); pass format='distractor' or 'ircot'",
        record=first.get("_id", first.get("question_id", 0)) if isinstance(first, dict) else 0,
    )


def parse_distractor(record: dict[str, Any], where: Where) -> Parsed:
    example_id = require_id(where, record, "_id")
    question = require_text(where, record, "question", "question")
    answer = require_text(where, record, "answer", "answer")
    qtype = optional(where, record, "type", str, "")
    paragraphs = context_paragraphs(where, record)
    gold = gold_ids_by_title(where, example_id, paragraphs, supporting_titles(where, record))
    chunks = context_chunks(example_id, paragraphs)
    example = Example(
        id=example_id,
        question=question,
        answers=[answer],
        gold_chunk_ids=gold,
        type=qtype,
        dataset=DATASET,
        context_ids=[c.id for c in chunks],
        raw=record,
    )
    return example, chunks


def parse_ircot(record: dict[str, Any], where: Where) -> Parsed:
    example_id = require_id(where, record, "question_id")
    question = require_text(where, record, "question_text", "question")
    answers = _ircot_answers(where, record)
    contexts = require(where, record, "contexts", list)
    if not contexts:
        raise where.error("empty context", "contexts")
    chunks: list[Chunk] = []
    gold: list[str] = []
    for idx, ctx in enumerate(contexts):
        field = f"contexts[{idx}]"
        check_type(where, ctx, dict, field)
        title = require(where, ctx, "title", str, f"{field}.title")
        text = require(where, ctx, "paragraph_text", str, f"{field}.paragraph_text")
        supporting = require(where, ctx, "is_supporting", bool, f"{field}.is_supporting")
        chunk = Chunk(chunk_id(example_id, idx), title, text.strip())
        chunks.append(chunk)
        if supporting:
            gold.append(chunk.id)
    if not gold:
        raise where.error("gold paragraph absent: no context has is_supporting=true", "contexts")
    example = Example(
        id=example_id,
        question=question,
        answers=answers,
        gold_chunk_ids=gold,
        type=optional(where, record, "type", str, ""),
        dataset=DATASET,
        context_ids=[c.id for c in chunks],
        raw=record,
    )
    return example, chunks


def _ircot_answers(where: Where, record: dict[str, Any]) -> list[str]:
    objects = require(where, record, "answers_objects", list)
    spans: list[str] = []
    for i, obj in enumerate(objects):
        check_type(where, obj, dict, f"answers_objects[{i}]")
        field = f"answers_objects[{i}].spans"
        spans.extend(string_list(where, require(where, obj, "spans", list, field), field))
    answers = unique_answers(spans)
    if not answers:
        raise where.error("empty answer", "answers_objects")
    return answers
