"""The loop every file reader shares: parse records, enforce unique ids, skip or raise on bad ones.

A reader only supplies a function that turns one record into an example and its chunks (or
says why the record is not a question at all, like MuSiQue's unanswerable contrast records);
strictness, limits, duplicate ids and the skipped list are handled here, the same way for all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from efficientrag.data.errors import SkippedRecord
from efficientrag.data.readers.fields import Where
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.signature import check_signature
from efficientrag.data.readers.source import SourceRecord
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import DataFormatError, InvalidArgumentError


@dataclass
class NotAQuestion:
    """A record that is valid but not usable as a question (always skipped, even when strict)."""

    reason: str


Parsed = tuple[Example, list[Chunk]] | NotAQuestion
# Bad records a strict read names one by one in its error; the rest are counted.
BAD_RECORDS_SHOWN = 20
ParseFn = Callable[[dict[str, Any], Where], Parsed]


def question_record(
    record: dict[str, Any],
    dataset: str,
    example_id: str,
    text: str,
    answers: list[str],
    gold: list[str],
    qtype: str,
    chunks: list[Chunk],
) -> Parsed:
    """What a reader's parse returns for a question record: its example (``raw`` is the record,
    ``context_ids`` its own chunks, in order) and those chunks."""
    return Example(example_id, text, answers, gold, qtype, dataset, [c.id for c in chunks], record), chunks


def collect(
    dataset: str,
    path: str | Path,
    records: Iterable[SourceRecord],
    parse: ParseFn,
    *,
    strict: bool = True,
    limit: int | None = None,
) -> ReadResult:
    if limit is not None and limit < 0:
        raise InvalidArgumentError(f"limit must be >= 0 or None, got {limit}")
    result = ReadResult(dataset=dataset, path=str(path))
    first_seen: dict[str, str] = {}
    bad: list[DataFormatError] = []  # strict: the first bad records, reported together at the end
    n_bad = 0
    checked = False
    for rec in records:
        if not checked and rec.obj is not None:
            check_signature(dataset, path, rec)  # another benchmark's file is no bad record: it stops
            checked = True
        if limit is not None and len(result.examples) >= limit:
            break
        where = Where(str(path), rec.line, rec.index)
        try:
            if rec.obj is None:
                raise rec.error or where.error("record could not be read")
            parsed = parse(rec.obj, where)
            if isinstance(parsed, NotAQuestion):
                result.skipped.append(SkippedRecord(parsed.reason, line=rec.line, record=where.record))
                continue
            example, chunks = parsed
            if example.id in first_seen:
                raise where.error(f"duplicate example id (first seen at {first_seen[example.id]})", "id")
        except DataFormatError as exc:
            if strict:
                n_bad += 1
                if len(bad) < BAD_RECORDS_SHOWN:
                    bad.append(exc.with_traceback(None))
            else:
                result.skipped.append(SkippedRecord(str(exc), line=exc.line, record=exc.record))
            continue
        first_seen[example.id] = f"line {rec.line}" if rec.line is not None else f"record {rec.index}"
        result.examples.append(example)
        result.chunks.extend(chunks)
    if bad:
        raise bad[0] if n_bad == 1 else all_bad_records(path, bad, n_bad)
    return result


def all_bad_records(path: str | Path, bad: list[DataFormatError], total: int) -> DataFormatError:
    """One error for a strict read that met ``total`` bad records, ``bad`` the first of them: each
    of those is named, the rest counted, so one run shows what to fix, not the first record only."""
    shown = "; ".join(_position(path, exc) for exc in bad)
    more = f"; and {total - len(bad)} more" if total > len(bad) else ""
    first = bad[0]
    err = DataFormatError(path, f"{total} bad records (data.strict=false skips them): {shown}{more}")
    err.line, err.record, err.field = first.line, first.record, first.field
    return err


def _position(path: str | Path, exc: DataFormatError) -> str:
    """``line 3, record q2, field 'question': empty question`` (the file is said once, in front)."""
    if exc.path != str(path):
        return str(exc)
    where = [f"line {exc.line}"] if exc.line is not None else []
    if exc.record is not None:
        where.append(f"record {exc.record}")
    if exc.field is not None:
        where.append(f"field '{exc.field}'")
    return f"{', '.join(where)}: {exc.message}" if where else exc.message
