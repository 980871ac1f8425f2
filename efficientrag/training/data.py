"""Training rows: what makes a row valid, and the line-by-line reader for files ``datasets`` cannot parse.

A malformed row is skipped and recorded with its file, line and reason (``skipped_rows.jsonl`` in
the run folder), never dropped silently; a file with more bad rows than the configured fraction
fails early with the first error, since that is a broken file rather than a few bad records. The
same row check runs on rows that ``datasets`` loaded (see :mod:`efficientrag.training.encoded`) and
on rows parsed here, so both paths accept and refuse exactly the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from efficientrag.data.errors import SkippedRecord
from efficientrag.errors import DataFormatError, InvalidArgumentError, not_a_file
from efficientrag.models.inputs import ROW_TYPES, FilterRow, LabelerRow

SPLIT_FILES = {"train": "train.jsonl", "validation": "validation.jsonl"}


@dataclass
class LoadedRows:
    path: Path
    rows: list[LabelerRow] | list[FilterRow]
    skipped: list[SkippedRecord]
    lines: list[int] = field(default_factory=list)  # source line of each kept row


def parse_row(record: Mapping[str, Any], kind: str) -> LabelerRow | FilterRow:
    """A typed, checked row; raises ``KeyError`` / ``TypeError`` / ``ValueError`` for a bad one.

    ``None`` values count as missing fields: ``datasets`` fills a key that some rows lack with null.
    """
    row = ROW_TYPES[kind].from_dict({k: v for k, v in record.items() if v is not None})
    _check_labels(row)
    return row


def row_error(path: str | Path, exc: Exception, *, line: int | None, record: Any) -> DataFormatError:
    """The error for a row that :func:`parse_row` refused, naming file, line, record and field."""
    field_name = str(exc.args[0]) if isinstance(exc, KeyError) else None
    message = f"missing field {field_name!r}" if field_name else str(exc)
    rec_id = record.get("id") if isinstance(record, Mapping) else None
    return DataFormatError(path, message, line=line, record=rec_id, field=field_name)


def check_bad_fraction(
    path: str | Path,
    kind: str,
    kept: int,
    skipped: int,
    seen: int,
    first_error: DataFormatError | None,
    limit: float,
) -> None:
    """Fail a file with no usable rows, or with more bad rows than ``max_bad_row_fraction``."""
    if not kept:
        raise first_error or DataFormatError(path, f"no {kind} rows in file")
    if seen and skipped / seen > limit:
        raise DataFormatError(
            path,
            f"{skipped} of {seen} rows are malformed (more than max_bad_row_fraction={limit}); first: {first_error}",
        )


def read_rows(path: str | Path, kind: str, *, limit: int = 0, max_bad_fraction: float = 0.01) -> LoadedRows:
    """Parse every line into a row; bad lines are skipped with their reason.

    ``limit`` counts kept rows: reading stops once that many good rows were read.
    """
    path = Path(path)
    rows: list[Any] = []
    lines: list[int] = []
    skipped: list[SkippedRecord] = []
    first_error: DataFormatError | None = None
    seen = 0
    for lineno, record, parse_error in numbered_records(path):
        if limit and len(rows) >= limit:
            break
        seen += 1
        try:
            if parse_error is not None:
                raise InvalidArgumentError(parse_error)
            row = parse_row(record, kind)
        except (KeyError, TypeError, ValueError) as exc:
            err = row_error(path, exc, line=lineno, record=record)
            first_error = first_error or err
            skipped.append(SkippedRecord(error=str(err), line=lineno, record=err.record))
            continue
        rows.append(row)
        lines.append(lineno)
    check_bad_fraction(path, kind, len(rows), len(skipped), seen, first_error, max_bad_fraction)
    return LoadedRows(path=path, rows=rows, skipped=skipped, lines=lines)


def numbered_records(path: Path) -> Iterator[tuple[int, dict[str, Any], str | None]]:
    """``(line number, record, parse error)`` for every non-blank line; bad JSON is reported, not raised."""
    if not path.is_file():
        raise not_a_file(path)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                yield lineno, {}, f"not valid JSON ({exc.msg} at column {exc.colno})"
                continue
            if not isinstance(record, dict):
                yield lineno, {}, f"expected a JSON object, got {type(record).__name__}"
                continue
            yield lineno, record, None


def nonblank_line_numbers(path: Path) -> list[int]:
    """Line number of each non-blank line: row ``i`` of a ``datasets`` JSON load is line ``[i]``."""
    with path.open("rb") as fh:
        return [lineno for lineno, raw in enumerate(fh, start=1) if raw.strip()]


def _check_labels(row: LabelerRow | FilterRow) -> None:
    bad = [x for x in row.labels if x not in (0, 1)]
    if bad:
        raise InvalidArgumentError(f"labels must be 0/1, found {bad[0]!r}")
    lists = (
        {"query_words": row.query_words, "chunk_words": row.chunk_words}
        if isinstance(row, LabelerRow)
        else {"words": row.words}
    )
    for name, words in lists.items():
        odd = [w for w in words if not isinstance(w, str)]
        if odd:
            raise InvalidArgumentError(f"{name} must be strings, found {odd[0]!r}")
