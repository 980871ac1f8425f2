"""Errors for bad input that say where the problem is: file, line or record, and field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SkippedRecord:
    """A record a lenient reader skipped, with the error that made it skip.

    Attributes:
        error: Why the record was skipped (the :class:`DataFormatError`'s message).
        line: The 1-based line of the record in its file, for line-based files.
        record: The record's id or index, where the file has no lines.
    """

    error: str
    line: int | None = None
    record: str | int | None = None

    def to_dict(self) -> dict[str, object]:
        """The skip as a JSON-ready dict (for ``skipped.jsonl`` and reports).

        Returns:
            ``{"error", "line", "record"}``.
        """
        return {"error": self.error, "line": self.line, "record": self.record}
