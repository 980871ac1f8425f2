"""MuSiQue (JSONL): paragraphs with ``idx``, and a decomposition whose steps name their paragraph.

Gold paragraphs are in decomposition order (``question_decomposition[].paragraph_support_idx``),
which is hop order. Records with ``answerable: false`` (MuSiQue-full's contrast questions) are
skipped with a reason, never read as examples. The toy world is written in this format and read
here too, under the dataset name ``"toy"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.data.readers.collect import NotAQuestion, Parsed, collect, question_record
from efficientrag.data.readers.fields import Where, chunk_id, unique_answers
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import iter_records
from efficientrag.data.schema import Chunk


def read_musique(
    path: str | Path, *, strict: bool = True, limit: int | None = None, dataset: str = "musique"
) -> ReadResult:
    """Read a MuSiQue JSONL file (the toy world is written in the same format).

    Args:
        path: The data file.
        strict: True (the default) fails on bad records with one :class:`DataFormatError` naming
            each (the first 20, then a count); False skips them, listing each in ``skipped``.
        limit: Stop after this many examples (None: read them all).
        dataset: The name the examples and the result carry (``"toy"`` for the toy world).

    Returns:
        The examples (gold paragraphs in the decomposition's hop order; unanswerable records
        skipped) and every paragraph as a chunk, before pooling.

    Raises:
        DataFormatError: The file cannot be read, or (``strict``) has bad records.
    """

    def parse(record: dict[str, Any], where: Where) -> Parsed:
        return parse_musique(record, where, dataset=dataset)

    return collect(dataset, path, iter_records(path), parse, strict=strict, limit=limit)


def parse_musique(record: dict[str, Any], where: Where, *, dataset: str = "musique") -> Parsed:
    example_id = where.require_id(record, "id")
    if where.optional(record, "answerable", bool, True) is False:
        return NotAQuestion("unanswerable record (answerable: false) skipped")
    question = where.require_text(record, "question", "question")
    answer = where.require_text(record, "answer", "answer")
    aliases = where.string_list(where.optional(record, "answer_aliases", list, []), "answer_aliases")
    chunks = _paragraph_chunks(where, record, example_id)
    gold = _gold_in_hop_order(where, record, example_id, {c.id for c in chunks})
    qtype = where.optional(record, "type", str, None)
    if qtype is None:
        qtype = example_id.split("__", 1)[0] if "__" in example_id else ""
    answers = unique_answers([answer, *aliases])
    return question_record(record, dataset, example_id, question, answers, gold, qtype, chunks)


def _paragraph_chunks(where: Where, record: dict[str, Any], example_id: str) -> list[Chunk]:
    paragraphs = where.require(record, "paragraphs", list)
    chunks: list[Chunk] = []
    seen: set[int] = set()
    for field, para in where.each_item(paragraphs, "paragraphs", dict, empty="empty context"):
        idx = where.require(para, "idx", int, f"{field}.idx")
        if idx in seen:
            raise where.error(f"duplicate paragraph idx {idx}", f"{field}.idx")
        seen.add(idx)
        title = where.require(para, "title", str, f"{field}.title")
        text = where.require(para, "paragraph_text", str, f"{field}.paragraph_text")
        where.optional(para, "is_supporting", bool, False, f"{field}.is_supporting")
        chunks.append(Chunk(chunk_id(example_id, idx), title, text.strip()))
    return chunks


def _gold_in_hop_order(where: Where, record: dict[str, Any], example_id: str, known: set[str]) -> list[str]:
    steps = where.require(record, "question_decomposition", list)
    gold: list[str] = []
    for field, step in where.each_item(steps, "question_decomposition", dict, empty="empty decomposition"):
        where.optional(step, "question", str, "", f"{field}.question")
        where.optional(step, "answer", str, "", f"{field}.answer")
        idx = where.require(step, "paragraph_support_idx", int, f"{field}.paragraph_support_idx")
        cid = chunk_id(example_id, idx)
        if cid not in known:
            raise where.error(
                f"gold paragraph absent: no paragraph has idx {idx}", f"{field}.paragraph_support_idx"
            )
        if cid not in gold:
            gold.append(cid)
    return gold
