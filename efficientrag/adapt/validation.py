"""Questions with known gold chunks in the adaptation corpus, which the adapted models are scored on.

``efficientrag adapt --validation FILE``: JSONL (or a JSON list) of ``{"id"?, "question",
"gold_ids": [chunk ids]}`` (``gold_chunk_ids`` is read too; ``answers`` may be given and is not
needed). Only retrieval is scored, so no answer is required, but every question needs at least
one gold id and every id must be in the corpus: a typo would read as a miss and quietly lower the
score the choice rests on.
"""

from __future__ import annotations

from pathlib import Path

from efficientrag.data.corpus import Corpus
from efficientrag.data.readers.fields import Where
from efficientrag.data.readers.source import iter_records
from efficientrag.data.schema import Example
from efficientrag.errors import DataFormatError

_GOLD_KEYS = ("gold_ids", "gold_chunk_ids")


def read_validation(path: str | Path, corpus: Corpus, corpus_path: str = "") -> list[Example]:
    """The questions of ``path``; raises :class:`DataFormatError` naming file, line and field.

    Args:
        path: the questions file.
        corpus: the adaptation corpus, which every gold id must name a chunk of.
        corpus_path: its file, for the error message.
    """
    examples: list[Example] = []
    seen: set[str] = set()
    for rec in iter_records(path):
        if rec.error is not None:
            raise rec.error
        where = Where(str(path), rec.line, None if rec.line else rec.index)
        obj = rec.obj or {}
        qid = where.require_id(obj, "id") if "id" in obj else f"line{rec.line or rec.index + 1}"
        if qid in seen:
            raise where.error(f"duplicate id {qid!r}", "id")
        seen.add(qid)
        question = where.require_text(obj, "question", "question")
        key = next((k for k in _GOLD_KEYS if k in obj), _GOLD_KEYS[0])
        gold = where.string_list(where.require(obj, key, list), key)
        if not gold:
            raise where.error("no gold chunk id: the question cannot be scored", key)
        for i, cid in enumerate(gold):
            if cid not in corpus:
                raise where.error(f"chunk id {cid!r} is not in the corpus {corpus_path}", f"{key}[{i}]")
        answers = where.string_list(obj.get("answers") or [], "answers")
        examples.append(
            Example(qid, question, list(answers), list(dict.fromkeys(gold)), dataset="validation")
        )
    if not examples:
        raise DataFormatError(path, "no question")
    return examples
