"""Errors for bad input that say where the problem is: file, line or record, and field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class DataFormatError(ValueError):
    """Input data that cannot be used. ``str()`` names the file, the record and the field."""

    def __init__(
        self,
        path: str | Path | None,
        message: str,
        *,
        line: int | None = None,
        record: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.record = record
        self.field = field
        self.message = message
        where = [self.path or "<input>"]
        if line is not None:
            where.append(f"line {line}")
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}")


@dataclass
class SkippedRecord:
    """A record a lenient reader skipped, with the error that made it skip."""

    error: str
    line: int | None = None
    record: str | int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"error": self.error, "line": self.line, "record": self.record}
