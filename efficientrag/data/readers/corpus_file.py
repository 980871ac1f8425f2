"""An extra corpus file pooled next to a dataset's own paragraphs (e.g. ``hotpot_train.100.corpus.json``).

Accepts a chunk JSONL (``{"id","title","text"}`` or FlashRAG ``{"id","contents"}``) or a
``{title: text}`` JSON object, told apart by content: a file that parses as one JSON object and
is not itself a chunk record is a title corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

from efficientrag.data.corpus import Corpus
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import read_text
from efficientrag.data.readers.title_corpus import read_title_corpus
from efficientrag.errors import DataFormatError


def is_title_corpus(text: str) -> bool:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    if isinstance(data, list):  # [{"title", "content"}] documents, not chunk records with ids
        return bool(data) and all(isinstance(d, dict) and "id" not in d for d in data)
    return isinstance(data, dict) and not ("id" in data and ("text" in data or "contents" in data))


def read_corpus_file(path: str | Path, *, dataset: str) -> ReadResult:
    """The chunks of a corpus file as a question-less :class:`ReadResult`, ready for pooling.

    Args:
        path: A chunk JSONL (``{"id", "title", "text"}`` or ``{"id", "contents"}``) or a title-keyed
            JSON corpus; which one is told by the content.
        dataset: The dataset name the result carries (the one the corpus is pooled with).

    Returns:
        A result with the chunks and no examples.

    Raises:
        DataFormatError: The file is unreadable or holds no chunk.
    """
    if is_title_corpus(read_text(path)):
        chunks = read_title_corpus(path)
        if not chunks:
            raise DataFormatError(path, "file is empty: a corpus needs at least one chunk")
    else:
        chunks = list(Corpus.load(path).chunks)
    return ReadResult(dataset=dataset, path=str(path), examples=[], chunks=chunks, skipped=[])
