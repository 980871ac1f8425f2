"""What every dataset reader returns: examples, their not-yet-pooled chunks, and what it skipped."""

from __future__ import annotations

from dataclasses import dataclass, field

from efficientrag.data.errors import SkippedRecord
from efficientrag.data.schema import Chunk, Example


@dataclass
class ReadResult:
    """One file's worth of data, before de-duplication.

    ``chunks`` holds every context paragraph of every example (ids ``"{example_id}-{idx:02d}"``),
    so the same Wikipedia paragraph may appear many times; :func:`efficientrag.data.pooling.pool`
    merges them. ``skipped`` lists every record a lenient read left out, with the reason.

    Attributes:
        dataset: The canonical dataset name (``hotpotqa``, ``2wikimultihopqa``, ``musique``, ...).
        path: The file it was read from, or a label for a generated or Hub source.
        examples: The questions read, in file order.
        chunks: Every context paragraph of those questions (repeats included), or a corpus file's chunks.
        skipped: The records a lenient read left out, each with its reason.
    """

    dataset: str
    path: str
    examples: list[Example] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    skipped: list[SkippedRecord] = field(default_factory=list)
