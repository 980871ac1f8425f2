"""A title-keyed JSON corpus: ``{title: [sentences] | text}`` (HippoRAG's ``*.corpus.json`` style)
or a list of ``{"title", "content": [sentences] | text}`` documents (the 2Wiki open-domain corpus).

Chunk ids are ``"title:" + title``: titles are the keys of the JSON object, so they are unique
within the file, the id can be read back to the title, and it cannot collide with the
``"{example_id}-{idx:02d}"`` ids of dataset context paragraphs. When such a corpus is pooled
after the questions that own the same paragraphs, the questions' ids win (first seen).
"""

from __future__ import annotations

from pathlib import Path

from efficientrag.data.readers.fields import Where
from efficientrag.data.readers.source import parse_json, read_text
from efficientrag.data.readers.wiki_context import join_sentences
from efficientrag.data.schema import Chunk
from efficientrag.errors import DataFormatError

TITLE_ID_PREFIX = "title:"


def title_chunk_id(title: str) -> str:
    return f"{TITLE_ID_PREFIX}{title}"


def read_title_corpus(path: str | Path) -> list[Chunk]:
    """Read a title-keyed JSON corpus (either shape in the module doc) as chunks.

    Args:
        path: The JSON file.

    Returns:
        One chunk per title, id ``"title:" + title``, sentences joined into its text.

    Raises:
        DataFormatError: The file is not one of the two shapes, a value is not text or a sentence
            list, or a document has no title or body or repeats a title.
    """
    data = parse_json(path, read_text(path))
    if isinstance(data, list):
        data = _documents_by_title(path, data)
    if not isinstance(data, dict):
        raise DataFormatError(path, f"expected a JSON object {{title: text}}, got {type(data).__name__}")
    chunks = []
    for n, (title, value) in enumerate(data.items()):
        if not title.strip():  # its id would be "title:" and, with no text, it would hold nothing
            raise DataFormatError(
                path, f"empty title {title!r}: titles are the chunk ids", record=n, field="title"
            )
        where = Where(str(path), None, title)
        where.check_type(value, (str, list), title)
        body = value.strip() if isinstance(value, str) else join_sentences(where.string_list(value, title))
        chunks.append(Chunk(title_chunk_id(title), title, body))
    return chunks


def _documents_by_title(path: str | Path, docs: list) -> dict[str, object]:
    out: dict[str, object] = {}
    for n, doc in enumerate(docs):
        where = Where(str(path), None, n)
        where.check_type(doc, dict, "document")
        title = doc.get("title")
        body = doc.get("content", doc.get("text"))
        if not isinstance(title, str) or not title.strip():
            raise where.error("no 'title' string", "title")
        if body is None:
            raise where.error("no 'content' (sentences) or 'text'", "content")
        if title in out:
            raise where.error(f"title {title!r} appears twice; titles are the chunk ids", "title")
        out[title] = body
    return out
