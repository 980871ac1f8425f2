"""The ``context`` / ``supporting_facts`` layout shared by HotpotQA and 2WikiMultihopQA.

``context`` is ``[[title, [sentence, ...]], ...]``; ``supporting_facts`` is ``[[title, sent_id],
...]``. HotpotQA's Hugging Face layout stores both column-wise (``{"title": [...], "sentences":
[...]}``); it is accepted too, because the official EfficientRAG loader expects it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from efficientrag.data.readers.fields import Where, chunk_id
from efficientrag.data.schema import Chunk


def join_sentences(sentences: list[str]) -> str:
    """Sentences carry their own leading spaces in these datasets; strip each, join with one space."""
    return " ".join(s for s in (x.strip() for x in sentences) if s)


def gold_and_chunks(where: Where, record: dict[str, Any], example_id: str) -> tuple[list[str], list[Chunk]]:
    """The gold chunk ids (supporting titles in order of first appearance) and the context chunks."""
    paragraphs = context_paragraphs(where, record)
    position: dict[str, int] = {}
    for idx, (title, _) in enumerate(paragraphs):
        position.setdefault(title, idx)  # a title repeated in the context maps to its first copy
    gold = []
    for title in supporting_titles(where, record):
        if title not in position:
            raise where.error(
                f"gold paragraph absent: supporting fact title {title!r} is not a context title",
                "supporting_facts",
            )
        gold.append(chunk_id(example_id, position[title]))
    chunks = [Chunk(chunk_id(example_id, idx), title, text) for idx, (title, text) in enumerate(paragraphs)]
    return gold, chunks


def context_paragraphs(where: Where, record: dict[str, Any]) -> list[tuple[str, str]]:
    """``(title, text)`` for every context paragraph, in the record's order."""
    return [
        (
            where.check_type(title, str, f"{field}[0]"),
            join_sentences(where.string_list(sentences, f"{field}[1]")),
        )
        for field, title, sentences in _pairs(
            where, record, "context", ("title", "sentences"), "empty context"
        )
    ]


def supporting_titles(where: Where, record: dict[str, Any]) -> list[str]:
    """Titles of the supporting paragraphs in order of first appearance, without repeats."""
    titles: list[str] = []
    for field, title, sent_id in _pairs(
        where, record, "supporting_facts", ("title", "sent_id"), "no supporting facts"
    ):
        where.check_type(title, str, f"{field}[0]")
        where.check_type(sent_id, int, f"{field}[1]")
        if title not in titles:
            titles.append(title)
    return titles


def _pairs(
    where: Where, record: dict[str, Any], key: str, names: tuple[str, str], empty: str
) -> Iterator[tuple[str, Any, Any]]:
    """``(field, first, second)`` for every ``[first, second]`` item of ``record[key]``, which may
    also be stored column-wise (``{names[0]: [...], names[1]: [...]}``)."""
    items = where.require(record, key, (list, dict))
    if isinstance(items, dict):
        items = _columns_to_pairs(where, items, key, names)
    for field, item in where.each_item(items, key, list, empty=empty):
        if len(item) != 2:
            raise where.error(f"expected [{names[0]}, {names[1]}], got {len(item)} items", field)
        yield field, item[0], item[1]


def _columns_to_pairs(
    where: Where, columns: dict[str, Any], field: str, keys: tuple[str, str]
) -> list[list[Any]]:
    first = where.require(columns, keys[0], list, f"{field}.{keys[0]}")
    second = where.require(columns, keys[1], list, f"{field}.{keys[1]}")
    if len(first) != len(second):
        raise where.error(f"'{keys[0]}' has {len(first)} items but '{keys[1]}' has {len(second)}", field)
    return [[a, b] for a, b in zip(first, second, strict=True)]
