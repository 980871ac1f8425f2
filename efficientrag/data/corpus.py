"""An in-memory corpus of chunks with id lookup, a content fingerprint, and JSONL persistence."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from efficientrag.data.schema import Chunk
from efficientrag.errors import DataFormatError, InvalidArgumentError, MissingKeyError
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.text.validity import text_problem

log = logging.getLogger(__name__)

# Line numbers of empty-text chunks named in the warning (the count covers the rest).
EMPTY_LINES_SHOWN = 5


class Corpus:
    """Ordered chunks; the order is the row order of every index built over it.

    Args:
        chunks: The chunks, in the order indexes will number them.

    Raises:
        ValueError: A chunk's id is empty, or two chunks share one.
    """

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self.chunks: list[Chunk] = list(chunks)
        self._index: dict[str, int] = {}
        for i, chunk in enumerate(self.chunks):
            if not chunk.id.strip():
                raise InvalidArgumentError(
                    f"chunk {i} has an empty id {chunk.id!r}; every chunk needs an id of its own"
                )
            if chunk.id in self._index:
                raise InvalidArgumentError(f"duplicate chunk id {chunk.id!r} in corpus")
            self._index[chunk.id] = i
        self._fingerprint: str | None = None

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.chunks)

    def __getitem__(self, i: int) -> Chunk:
        return self.chunks[i]

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._index

    def get(self, chunk_id: str) -> Chunk:
        """Look a chunk up by id (hits and gold labels name chunks by id, indexes by row).

        Args:
            chunk_id: The chunk's id.

        Returns:
            The chunk.

        Raises:
            KeyError: No chunk has that id.
        """
        try:
            return self.chunks[self._index[chunk_id]]
        except KeyError:
            raise MissingKeyError(f"chunk id {chunk_id!r} is not in the corpus") from None

    def position(self, chunk_id: str) -> int:
        """The row of a chunk in every index built over this corpus.

        Args:
            chunk_id: The chunk's id.

        Returns:
            Its 0-based position in :attr:`chunks`.

        Raises:
            KeyError: No chunk has that id.
        """
        return self._index[chunk_id]

    @property
    def ids(self) -> list[str]:
        """Every chunk id, in corpus order."""
        return [c.id for c in self.chunks]

    def fingerprint(self) -> str:
        """sha256 over ids and contents in order: an index built on another corpus will not match.

        Returns:
            The hex digest (computed once, then cached).
        """
        if self._fingerprint is None:
            h = hashlib.sha256()
            for c in self.chunks:
                h.update(c.id.encode("utf-8"))
                h.update(b"\x00")
                h.update(c.contents.encode("utf-8"))
                h.update(b"\x01")
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def save(self, path: str | Path) -> None:
        """Write the corpus as JSONL, one ``{"id", "title", "text"}`` line per chunk, in order.

        Args:
            path: The file to write (replaced atomically).
        """
        write_jsonl(path, (c.to_dict() for c in self.chunks))

    @classmethod
    def load(cls, path: str | Path) -> Corpus:
        """Read ``{"id","title","text"}`` lines (or FlashRAG's ``{"id","contents"}``).

        A file with no chunk, or a chunk id on two lines, fails naming the file (and both lines):
        an empty corpus would only fail later, at indexing, without saying which file it was.
        Chunks with empty text are kept (indexed by their title) and counted in a warning.

        Args:
            path: The corpus JSONL file.

        Returns:
            The corpus, in file order.

        Raises:
            DataFormatError: A line has no id (or a null or empty one) or no text, has neither a
                title nor a text, an id repeats, or the file has no chunk.
        """
        chunks = []
        empty_lines: list[int] = []
        first_line: dict[str, int] = {}
        for lineno, rec in enumerate(read_jsonl(path), start=1):
            chunk = _chunk_of(path, lineno, rec)
            if chunk.id in first_line:
                raise DataFormatError(
                    path,
                    f"repeats chunk id {chunk.id!r} of line {first_line[chunk.id]}",
                    line=lineno,
                    field="id",
                )
            first_line[chunk.id] = lineno
            if not chunk.text.strip():
                empty_lines.append(lineno)
            chunks.append(chunk)
        if not chunks:
            raise DataFormatError(path, "file is empty: a corpus needs at least one chunk")
        if empty_lines:
            shown = ", ".join(map(str, empty_lines[:EMPTY_LINES_SHOWN]))
            more = ", ..." if len(empty_lines) > EMPTY_LINES_SHOWN else ""
            log.warning(
                "%s: %d of %d chunks have empty text (lines %s%s); they are indexed by their title alone",
                path,
                len(empty_lines),
                len(chunks),
                shown,
                more,
            )
        return cls(chunks)


def _chunk_of(path: str | Path, lineno: int, rec: dict[str, Any]) -> Chunk:
    """One corpus line as a chunk, refused when it could not be told apart or found: hits, gold
    labels and the loop's seen-set name chunks by id, so an empty id (or ``null``, which would
    become the id ``"None"``) makes every later chunk sharing it vanish as "already seen"; a chunk
    with neither title nor text has nothing to be indexed or found by."""
    if "id" not in rec:
        raise DataFormatError(path, "missing chunk id", line=lineno, field="id")
    cid = rec["id"]
    if cid is None or isinstance(cid, bool) or not isinstance(cid, (str, int)):
        got = "null" if cid is None else type(cid).__name__
        raise DataFormatError(
            path, f"chunk id must be a string (or an integer), got {got}", line=lineno, field="id"
        )
    if not str(cid).strip():
        raise DataFormatError(
            path, f"empty chunk id {cid!r}: every chunk needs an id of its own", line=lineno, field="id"
        )
    if "text" not in rec and "contents" not in rec:
        raise DataFormatError(path, "chunk has neither 'text' nor 'contents'", line=lineno, field="text")
    chunk = Chunk.from_dict(rec)
    for name in ("id", "title", "text", "contents"):
        problem = text_problem(rec[name]) if isinstance(rec.get(name), str) else None
        if problem is not None and problem != "empty":
            raise DataFormatError(path, f"chunk {name}: {problem}", line=lineno, field=name)
    if not chunk.title.strip() and not chunk.text.strip():
        field = "text" if "text" in rec else "contents"
        raise DataFormatError(
            path,
            "chunk has an empty title and an empty text: nothing to index it or find it by; "
            "drop the line or fill it",
            line=lineno,
            field=field,
        )
    return chunk
