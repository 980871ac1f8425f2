"""The ``context`` / ``supporting_facts`` layout shared by HotpotQA and 2WikiMultihopQA.

``context`` is ``[[title, [sentence, ...]], ...]``; ``supporting_facts`` is ``[[title, sent_id],
...]``. HotpotQA's Hugging Face layout stores both column-wise (``{"title": [...], "sentences":
[...]}``); it is accepted too, because the official EfficientRAG loader expects it.
"""

from __future__ import annotations

from typing import Any

from efficientrag.data.readers.fields import Where, check_type, chunk_id, require, string_list
from efficientrag.data.schema import Chunk


def join_sentences(sentences: list[str]) -> str:
    """Sentences carry their own leading spaces in these datasets; strip each, join with one space."""
    return " ".join(s for s in (x.strip() for x in sentences) if s)


def context_paragraphs(where: Where, record: dict[str, Any]) -> list[tuple[str, str]]:
    """``(title, text)`` for every context paragraph, in the record's order."""
    context = require(where, record, "context", (list, dict))
    if isinstance(context, dict):
        context = _columns_to_pairs(where, context, "context", ("title", "sentences"))
    if not context:
        raise where.error("empty context", "context")
    out = []
    for i, item in enumerate(context):
        field = f"context[{i}]"
        check_type(where, item, list, field)
        if len(item) != 2:
            raise where.error(f"expected [title, sentences], got {len(item)} items", field)
        title = check_type(where, item[0], str, f"{field}[0]")
        sentences = string_list(where, item[1], f"{field}[1]")
        out.append((title, join_sentences(sentences)))
    return out


def supporting_titles(where: Where, record: dict[str, Any]) -> list[str]:
    """Titles of the supporting paragraphs in order of first appearance, without repeats."""
    facts = require(where, record, "supporting_facts", (list, dict))
    if isinstance(facts, dict):
        facts = _columns_to_pairs(where, facts, "supporting_facts", ("title", "sent_id"))
    if not facts:
        raise where.error("no supporting facts", "supporting_facts")
    titles: list[str] = []
    for i, item in enumerate(facts):
        field = f"supporting_facts[{i}]"
        check_type(where, item, list, field)
        if len(item) != 2:
            raise where.error(f"expected [title, sent_id], got {len(item)} items", field)
        title = check_type(where, item[0], str, f"{field}[0]")
        check_type(where, item[1], int, f"{field}[1]")
        if title not in titles:
            titles.append(title)
    return titles


def gold_ids_by_title(
    where: Where, example_id: str, paragraphs: list[tuple[str, str]], titles: list[str]
) -> list[str]:
    """Map supporting titles to chunk ids; a title repeated in the context maps to its first copy."""
    position: dict[str, int] = {}
    for idx, (title, _) in enumerate(paragraphs):
        position.setdefault(title, idx)
    gold = []
    for title in titles:
        if title not in position:
            raise where.error(
                f"gold paragraph absent: supporting fact title {title!r} is not a context title",
                "supporting_facts",
            )
        gold.append(chunk_id(example_id, position[title]))
    return gold


def context_chunks(example_id: str, paragraphs: list[tuple[str, str]]) -> list[Chunk]:
    return [Chunk(chunk_id(example_id, idx), title, text) for idx, (title, text) in enumerate(paragraphs)]


def _columns_to_pairs(
    where: Where, columns: dict[str, Any], field: str, keys: tuple[str, str]
) -> list[list[Any]]:
    first = require(where, columns, keys[0], list, f"{field}.{keys[0]}")
    second = require(where, columns, keys[1], list, f"{field}.{keys[1]}")
    if len(first) != len(second):
        raise where.error(f"'{keys[0]}' has {len(first)} items but '{keys[1]}' has {len(second)}", field)
    return [[a, b] for a, b in zip(first, second, strict=True)]
