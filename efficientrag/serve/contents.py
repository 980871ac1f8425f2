"""The ``contents`` of a Search-R1 document: the corpus row's own text, quotes included.

Search-R1's retrieval server returns FlashRAG corpus rows, ``{"id", "contents"}``, as they are in
the corpus file, and its client reads the first line of ``contents`` as the title. Wiki-18, the
corpus its models were trained on, writes titles in quotes (``"\\"Title\\"\\ntext"``). The library
reads such a row into a ``Chunk`` with the title's quotes stripped (its title is used in
``"{title}: {text}"`` for indexing), so ``f"{title}\\n{text}"`` would hand a trained policy a
format it never saw.

Keeping every row's contents in memory would double a 21-million-row corpus. Instead the corpus
files are read once and their rows compared with what the chunk would give back: a corpus's
FlashRAG rows almost always share one style (quoted titles, or plain ones), so the style is kept,
and only the rows it would not reproduce exactly are kept whole (``exceptions``). ``{"id",
"title", "text"}`` rows have no contents of their own: theirs is the FlashRAG row they would be,
``"title\\ntext"``. A Milvus collection searched without its corpus file gives chunks only; they get
the plain style.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from efficientrag.data.schema import Chunk

QUOTED, PLAIN = "quoted", "plain"


@dataclass
class SearchR1Contents:
    """``contents(chunk)``: the row's own contents. ``style``: how the corpus's FlashRAG rows write
    a title (``quoted`` or ``plain``); ``exceptions``: chunk id -> contents for the rows (FlashRAG or
    not) that the style would not reproduce."""

    style: str = PLAIN
    exceptions: dict[str, str] = field(default_factory=dict)

    def contents(self, chunk: Chunk) -> str:
        own = self.exceptions.get(chunk.id)
        if own is not None:
            return own
        return render(chunk, self.style)


def render(chunk: Chunk, style: str) -> str:
    """``"title\\ntext"``, with the title in quotes in the quoted style; a chunk with no title is
    its text (a FlashRAG row with no newline)."""
    if style == QUOTED and chunk.title:
        return f'"{chunk.title}"\n{chunk.text}'
    return f"{chunk.title}\n{chunk.text}"


def read_contents(paths: Iterable[str | Path]) -> SearchR1Contents:
    """The contents of the rows of ``paths`` (corpus JSONL files, as ``Corpus.load`` reads them),
    streamed: the style is the one most of the first ``STYLE_SAMPLE`` titled FlashRAG rows use, and
    every row it would not reproduce exactly is kept whole, so the result is exact whatever the mix.

    Args:
        paths: The corpus files the served corpus was read from (already checked by ``Corpus.load``).

    Returns:
        The style of their FlashRAG rows and the rows it does not reproduce.
    """
    paths = [Path(p) for p in paths]
    votes = [_is_quoted(own) for own, chunk in _sample(paths) if own is not None and chunk.title]
    style = QUOTED if sum(votes) * 2 > len(votes) else PLAIN
    out = SearchR1Contents(style)
    for path in paths:
        for own, chunk in _rows(path):
            wanted = own if own is not None else render(chunk, PLAIN)
            if render(chunk, style) != wanted:
                out.exceptions[chunk.id] = wanted
    return out


# FlashRAG rows with a title that decide a corpus's style.
STYLE_SAMPLE = 1000


def _sample(paths: list[Path]) -> list[tuple[str | None, Chunk]]:
    out: list[tuple[str | None, Chunk]] = []
    for path in paths:
        for own, chunk in _rows(path):
            if own is not None and chunk.title:
                out.append((own, chunk))
                if len(out) >= STYLE_SAMPLE:
                    return out
    return out


def _is_quoted(contents: str) -> bool:
    first = contents.partition("\n")[0].strip()
    return len(first) > 1 and first.startswith('"') and first.endswith('"')


def _rows(path: Path) -> Iterable[tuple[str | None, Chunk]]:
    """(the row's own ``contents`` or None, its chunk) for every line of a corpus file."""
    with path.open(encoding="utf-8-sig") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            own = str(rec["contents"]) if "text" not in rec and "contents" in rec else None
            yield own, Chunk.from_dict(rec)
