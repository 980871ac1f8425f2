"""JSONL reading and crash-safe appending: the storage format of every resumable job.

A job that is killed mid-write leaves at most one torn last line. :class:`JsonlAppender`
repairs that on open (cuts the torn tail), so a rerun appends after the last complete record,
and :func:`read_jsonl` can be told to tolerate a torn final line.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from efficientrag.atomic import atomic_open
from efficientrag.closing import Closing
from efficientrag.errors import DataFormatError, not_a_file

log = logging.getLogger(__name__)


def read_jsonl(path: str | Path, *, allow_torn_tail: bool = False) -> Iterator[dict[str, Any]]:
    """Yield one dict per line; a bad line raises :class:`DataFormatError` naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise not_a_file(path)
    with path.open("rb") as fh:
        lines = fh.read().split(b"\n")
    last = len(lines)
    offset = 0  # byte offset of the current line in the file
    for lineno, raw in enumerate(lines, start=1):
        line_start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise DataFormatError(path, not_utf8_message(exc, line_start), line=lineno) from exc
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            if allow_torn_tail and lineno >= last - 1 and not raw.endswith(b"\n"):
                return
            raise DataFormatError(
                path, f"not valid JSON ({exc.msg} at column {exc.colno})", line=lineno
            ) from exc
        if not isinstance(obj, dict):
            raise DataFormatError(path, f"expected a JSON object, got {type(obj).__name__}", line=lineno)
        yield obj


def not_utf8_message(exc: UnicodeDecodeError, base_offset: int = 0) -> str:
    """What a user needs to find the bad byte: its value and its offset in the file."""
    bad = exc.object[exc.start : exc.start + 1].hex()
    return (
        f"not UTF-8 text: byte 0x{bad} at byte offset {base_offset + exc.start} ({exc.reason}); "
        "save the file as UTF-8"
    )


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write all records atomically (:func:`efficientrag.atomic.atomic_open`): readers never see
    half a file."""
    n = 0
    with atomic_open(path) as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


def repair_torn_tail(path: Path) -> int:
    """Cut an incomplete last line left by a killed writer. Returns the number of bytes cut."""
    if not path.is_file():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        # Walk back to the previous newline.
        pos = size - 1
        chunk = 4096
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            buf = fh.read(pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                fh.truncate(keep)
                return size - keep
            pos = start
        fh.truncate(0)
        return size


class JsonlAppender(Closing):
    """Append records one per line, flushed per record (fsync every ``sync_every`` records, or,
    with ``sync_seconds``, at most once per that many seconds; always on close).

    A flushed line survives a killed process; fsync only adds safety against a power loss, at
    1-2 ms per call that block the writer (an event loop with 64 LLM calls in flight spends a
    fifth of its time there). Writers whose lost trailing records are simply redone on resume
    (the synthesis stages) sync by time instead of per record.
    """

    def __init__(self, path: str | Path, *, sync_every: int = 1, sync_seconds: float | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.cut_bytes = repair_torn_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")
        self._sync_every = max(1, sync_every)
        self._sync_seconds = sync_seconds
        self._last_sync = time.monotonic()
        self._pending = 0

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()
        self._pending += 1
        if self._sync_seconds is not None:
            due = time.monotonic() - self._last_sync >= self._sync_seconds
        else:
            due = self._pending >= self._sync_every
        if due:
            os.fsync(self._fh.fileno())
            self._pending = 0
            self._last_sync = time.monotonic()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records a resumable job has written so far: none before the file exists, and the torn
    last line a killed writer may leave is skipped (its rerun repairs it and redoes the record)."""
    path = Path(path)
    return list(read_jsonl(path, allow_torn_tail=True)) if path.is_file() else []


def read_done_ids(path: str | Path, key: str = "id") -> set[str]:
    """Ids already written to a JSONL output (tolerating a torn last line)."""
    return {str(r[key]) for r in read_records(path) if key in r}


def drop_duplicate_ids(path: str | Path, key: str = "id") -> int:
    """Rewrite ``path`` (atomically) keeping one record per ``key``; returns how many were dropped.

    Two writers appending to one file at once (before folders were locked, see
    :mod:`efficientrag.run_lock`) leave some ids twice. The first record of each id is kept: every
    copy was made under the same inputs (a resumed folder is bound to them), and keeping the first
    is stable, so a second repair changes nothing. Records without ``key`` are all kept; a torn last
    line is dropped as its writer's rerun would. A file with no duplicates is left untouched. Call
    it holding the folder's lock, so no one appends while the file is rewritten.

    Args:
        path: a JSONL file written by a resumable stage (nothing happens if it does not exist).
        key: the field that identifies a record.
    """
    path = Path(path)
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    dropped = 0
    for rec in read_records(path):
        if key in rec:
            rid = str(rec[key])
            if rid in seen:
                dropped += 1
                continue
            seen.add(rid)
        kept.append(rec)
    if dropped:
        write_jsonl(path, kept)
        log.warning(
            "%s held %d duplicate records (two writers at once?): dropped them, kept the first per %s",
            path,
            dropped,
            key,
        )
    return dropped
