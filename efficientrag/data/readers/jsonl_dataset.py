"""Bring-your-own data: a questions JSONL plus a corpus JSONL (ours, or FlashRAG's ``{id, contents}``).

Question records: ``{"id", "question", "answers": [...] | "answer": "...", "gold_ids": [chunk ids],
"type"?}``. ``gold_chunk_ids`` is accepted for ``gold_ids`` and FlashRAG's ``golden_answers`` for
``answers``. ``gold_ids`` may be an empty list (a question usable for QA scoring only), but every
id it lists must be in the corpus: a typo there would silently read as a retrieval miss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.readers.collect import Parsed, collect, question_record
from efficientrag.data.readers.fields import Where, unique_answers
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import iter_records

DATASET = "jsonl"
_ANSWER_KEYS = ("answers", "golden_answers")
_GOLD_KEYS = ("gold_ids", "gold_chunk_ids")


def read_jsonl_dataset(
    questions_path: str | Path,
    corpus_path: str | Path,
    *,
    strict: bool = True,
    limit: int | None = None,
) -> ReadResult:
    """Read your own questions against your own corpus (the record format is in the module doc).

    Args:
        questions_path: The questions JSONL.
        corpus_path: The corpus JSONL (``{"id", "title", "text"}`` or FlashRAG's ``{"id", "contents"}``).
        strict: True (the default) fails on bad records with one :class:`DataFormatError` naming
            each (the first 20, then a count); False skips them, listing each in ``skipped``.
        limit: Stop after this many examples (None: read them all).

    Returns:
        The examples and the whole corpus as chunks.

    Raises:
        DataFormatError: A file cannot be read, or (``strict``) has bad records, such as a gold id
            that is not in the corpus.
    """
    corpus = Corpus.load(corpus_path)

    def parse(record: dict[str, Any], where: Where) -> Parsed:
        return parse_question(record, where, corpus, str(corpus_path))

    result = collect(DATASET, questions_path, iter_records(questions_path), parse, strict=strict, limit=limit)
    result.chunks = list(corpus.chunks)
    return result


def parse_question(record: dict[str, Any], where: Where, corpus: Corpus, corpus_path: str) -> Parsed:
    example_id = where.require_id(record, "id")
    question = where.require_text(record, "question", "question")
    answers = _answers(where, record)
    gold_key = next((k for k in _GOLD_KEYS if k in record), _GOLD_KEYS[0])
    gold = where.string_list(where.require(record, gold_key, list), gold_key)
    for i, cid in enumerate(gold):
        if cid not in corpus:
            raise where.error(
                f"gold paragraph absent: chunk id {cid!r} is not in the corpus {corpus_path}",
                f"{gold_key}[{i}]",
            )
    qtype = where.optional(record, "type", str, "")
    return question_record(
        record, DATASET, example_id, question, answers, list(dict.fromkeys(gold)), qtype, []
    )


def _answers(where: Where, record: dict[str, Any]) -> list[str]:
    key = next((k for k in _ANSWER_KEYS if k in record), None)
    if key is not None:
        answers = unique_answers(where.string_list(record[key], key))
        if not answers:
            raise where.error("empty answer", key)
        return answers
    if "answer" not in record:
        raise where.error("missing field (give 'answers' as a list or 'answer' as a string)", "answers")
    return [where.require_text(record, "answer", "answer")]
