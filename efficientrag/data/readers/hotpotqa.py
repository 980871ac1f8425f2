"""HotpotQA: the original distractor JSON and the IRCoT-processed JSONL, told apart by content.

Distractor records give sentence-level ``supporting_facts``; gold paragraphs are ordered by the
first appearance of their title there (HotpotQA lists the bridge paragraph first in most
records, but it does not promise hop order). IRCoT records only flag ``is_supporting`` per
paragraph, so their gold order is context order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from efficientrag.data.readers.collect import Parsed, collect, question_record
from efficientrag.data.readers.fields import Where, chunk_id, unique_answers
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.signature import check_signature
from efficientrag.data.readers.source import SourceRecord, iter_records, read_text
from efficientrag.data.readers.wiki_context import gold_and_chunks
from efficientrag.data.schema import Chunk
from efficientrag.errors import DataFormatError, InvalidArgumentError

HotpotFormat = Literal["auto", "distractor", "ircot"]
DATASET = "hotpotqa"


def read_hotpotqa(
    path: str | Path,
    *,
    strict: bool = True,
    limit: int | None = None,
    format: HotpotFormat = "auto",
) -> ReadResult:
    """Read a HotpotQA dev file, in the original distractor JSON or IRCoT's JSONL.

    Args:
        path: The data file.
        strict: True (the default) fails on bad records with one :class:`DataFormatError` naming
            each (the first 20, then a count); False skips them, listing each in ``skipped``.
        limit: Stop after this many examples (None: read them all).
        format: ``"distractor"``, ``"ircot"``, or ``"auto"`` (decided by the first record's keys).

    Returns:
        The examples (gold paragraphs ordered by first appearance in ``supporting_facts``) and every
        context paragraph as a chunk, before pooling.

    Raises:
        DataFormatError: The file cannot be read, or (``strict``) has bad records.
        ValueError: ``format`` is none of the three.
    """
    if format not in ("auto", "distractor", "ircot"):
        raise InvalidArgumentError(f"format must be 'auto', 'distractor' or 'ircot', got {format!r}")
    records = list(iter_records(path, read_text(path)))
    first = next((r for r in records if r.obj is not None), None)
    if first is not None:  # another benchmark's file is named as such, not as a format HotpotQA lacks
        check_signature(DATASET, path, first)
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
    example_id = where.require_id(record, "_id")
    question = where.require_text(record, "question", "question")
    answer = where.require_text(record, "answer", "answer")
    qtype = where.optional(record, "type", str, "")
    gold, chunks = gold_and_chunks(where, record, example_id)
    return question_record(record, DATASET, example_id, question, [answer], gold, qtype, chunks)


def parse_ircot(record: dict[str, Any], where: Where) -> Parsed:
    example_id = where.require_id(record, "question_id")
    question = where.require_text(record, "question_text", "question")
    answers = _ircot_answers(where, record)
    contexts = where.require(record, "contexts", list)
    chunks: list[Chunk] = []
    gold: list[str] = []
    for idx, (field, ctx) in enumerate(where.each_item(contexts, "contexts", dict, empty="empty context")):
        title = where.require(ctx, "title", str, f"{field}.title")
        text = where.require(ctx, "paragraph_text", str, f"{field}.paragraph_text")
        supporting = where.require(ctx, "is_supporting", bool, f"{field}.is_supporting")
        chunk = Chunk(chunk_id(example_id, idx), title, text.strip())
        chunks.append(chunk)
        if supporting:
            gold.append(chunk.id)
    if not gold:
        raise where.error("gold paragraph absent: no context has is_supporting=true", "contexts")
    qtype = where.optional(record, "type", str, "")
    return question_record(record, DATASET, example_id, question, answers, gold, qtype, chunks)


def _ircot_answers(where: Where, record: dict[str, Any]) -> list[str]:
    objects = where.require(record, "answers_objects", list)
    spans: list[str] = []
    for field, obj in where.each_item(objects, "answers_objects", dict):
        spans.extend(where.string_list(where.require(obj, "spans", list, f"{field}.spans"), f"{field}.spans"))
    answers = unique_answers(spans)
    if not answers:
        raise where.error("empty answer", "answers_objects")
    return answers
