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
    """

    dataset: str
    path: str
    examples: list[Example] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    skipped: list[SkippedRecord] = field(default_factory=list)
