"""MuSiQue (JSONL): paragraphs with ``idx``, and a decomposition whose steps name their paragraph.

Gold paragraphs are in decomposition order (``question_decomposition[].paragraph_support_idx``),
which is hop order. Records with ``answerable: false`` (MuSiQue-full's contrast questions) are
skipped with a reason, never read as examples. The toy world is written in this format and read
here too, under the dataset name ``"toy"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.data.readers.collect import NotAQuestion, Parsed, collect
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
from efficientrag.data.readers.source import iter_records
from efficientrag.data.schema import Chunk, Example


def read_musique(
    path: str | Path, *, strict: bool = True, limit: int | None = None, dataset: str = "musique"
) -> ReadResult:
    def parse(record: dict[str, Any], where: Where) -> Parsed:
        return parse_musique(record, where, dataset=dataset)

    return collect(dataset, path, iter_records(path), parse, strict=strict, limit=limit)


def parse_musique(record: dict[str, Any], where: Where, *, dataset: str = "musique") -> Parsed:
    example_id = require_id(where, record, "id")
    if optional(where, record, "answerable", bool, True) is False:
        return NotAQuestion("unanswerable record (answerable: false) skipped")
    question = require_text(where, record, "question", "question")
    answer = require_text(where, record, "answer", "answer")
    aliases = string_list(where, optional(where, record, "answer_aliases", list, []), "answer_aliases")
    chunks = _paragraph_chunks(where, record, example_id)
    gold = _gold_in_hop_order(where, record, example_id, {c.id for c in chunks})
    qtype = optional(where, record, "type", str, None)
    if qtype is None:
        qtype = example_id.split("__", 1)[0] if "__" in example_id else ""
    example = Example(
        id=example_id,
        question=question,
        answers=unique_answers([answer, *aliases]),
        gold_chunk_ids=gold,
        type=qtype,
        dataset=dataset,
        context_ids=[c.id for c in chunks],
        raw=record,
    )
    return example, chunks


def _paragraph_chunks(where: Where, record: dict[str, Any], example_id: str) -> list[Chunk]:
    paragraphs = require(where, record, "paragraphs", list)
    if not paragraphs:
        raise where.error("empty context", "paragraphs")
    chunks: list[Chunk] = []
    seen: set[int] = set()
    for i, para in enumerate(paragraphs):
        field = f"paragraphs[{i}]"
        check_type(where, para, dict, field)
        idx = require(where, para, "idx", int, f"{field}.idx")
        if idx in seen:
            raise where.error(f"duplicate paragraph idx {idx}", f"{field}.idx")
        seen.add(idx)
        title = require(where, para, "title", str, f"{field}.title")
        text = require(where, para, "paragraph_text", str, f"{field}.paragraph_text")
        optional(where, para, "is_supporting", bool, False, f"{field}.is_supporting")
        chunks.append(Chunk(chunk_id(example_id, idx), title, text.strip()))
    return chunks


def _gold_in_hop_order(where: Where, record: dict[str, Any], example_id: str, known: set[str]) -> list[str]:
    steps = require(where, record, "question_decomposition", list)
    if not steps:
        raise where.error("empty decomposition", "question_decomposition")
    gold: list[str] = []
    for i, step in enumerate(steps):
        field = f"question_decomposition[{i}]"
        check_type(where, step, dict, field)
        optional(where, step, "question", str, "", f"{field}.question")
        optional(where, step, "answer", str, "", f"{field}.answer")
        idx = require(where, step, "paragraph_support_idx", int, f"{field}.paragraph_support_idx")
        cid = chunk_id(example_id, idx)
        if cid not in known:
            raise where.error(
                f"gold paragraph absent: no paragraph has idx {idx}", f"{field}.paragraph_support_idx"
            )
        if cid not in gold:
            gold.append(cid)
    return gold
