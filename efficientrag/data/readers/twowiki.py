"""2WikiMultihopQA: the original JSON list (``_id, type, question, context, supporting_facts,
evidences, answer``).

Gold paragraphs follow the first appearance of their title in ``supporting_facts``; in 2Wiki that
order follows the evidence chain (the bridge entity's paragraph before the one it leads to).
Some records repeat a distractor title with identical text: the first copy is the one a gold
title maps to, and pooling merges the copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.data.readers.collect import Parsed, collect, question_record
from efficientrag.data.readers.fields import Where
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import iter_records
from efficientrag.data.readers.title_corpus import title_chunk_id
from efficientrag.data.readers.wiki_context import gold_and_chunks, supporting_titles

DATASET = "2wikimultihopqa"


def read_2wiki(path: str | Path, *, strict: bool = True, limit: int | None = None) -> ReadResult:
    """Read a 2WikiMultihopQA file (the original ``dev.json``, or HippoRAG's open-domain slices).

    Args:
        path: The data file.
        strict: True (the default) fails on bad records with one :class:`DataFormatError` naming
            each (the first 20, then a count); False skips them, listing each in ``skipped``.
        limit: Stop after this many examples (None: read them all).

    Returns:
        The examples and every context paragraph as a chunk, before pooling. Open-domain records
        have no paragraphs: their gold ids name chunks of a title corpus (``"title:" + title``),
        which the data's ``corpus_path`` must supply.

    Raises:
        DataFormatError: The file cannot be read, or (``strict``) has bad records.
    """
    return collect(DATASET, path, iter_records(path), parse_2wiki, strict=strict, limit=limit)


def parse_2wiki(record: dict[str, Any], where: Where) -> Parsed:
    # HippoRAG's open-domain slices name the id "id"; the original files "_id".
    example_id = where.require_id(record, "id" if "_id" not in record and "id" in record else "_id")
    question = where.require_text(record, "question", "question")
    answer = where.require_text(record, "answer", "answer")
    qtype = where.optional(record, "type", str, "")
    where.optional(record, "evidences", list, [])
    if record.get("context") is None:
        # Open-domain record (HippoRAG's slices): no paragraphs of its own; its gold documents
        # are the supporting-fact titles of a title corpus given as the data's corpus_path.
        gold = list(dict.fromkeys(title_chunk_id(t) for t in supporting_titles(where, record)))
        return question_record(record, DATASET, example_id, question, [answer], gold, qtype, [])
    gold, chunks = gold_and_chunks(where, record, example_id)
    return question_record(record, DATASET, example_id, question, [answer], gold, qtype, chunks)
