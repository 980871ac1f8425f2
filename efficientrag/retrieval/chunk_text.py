"""A chunk rebuilt from what a search backend stores: its id, title and the indexed text.

Every backend here indexes ``chunk.contents`` (``"{title}: {text}"``), and stores that rather than
the bare text so that BM25 sees the title words too. The text is recovered by removing the
``"{title}: "`` prefix; stored text without it (a collection or vector store of the user's own)
is taken as the chunk text unchanged.
"""

from __future__ import annotations

from efficientrag.data.schema import Chunk


def chunk_from_stored(chunk_id: str, title: str, stored: str) -> Chunk:
    prefix = f"{title}: "
    if title and stored.startswith(prefix):
        return Chunk(chunk_id, title, stored[len(prefix) :])
    return Chunk(chunk_id, title, stored)
