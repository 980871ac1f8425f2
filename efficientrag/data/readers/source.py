"""Reading a data file as a sequence of records, whether it is a JSON list or JSON Lines.

Readers decide the container by the file's content (a JSON list starts with ``[``), not by its
extension: dataset mirrors rename files freely. A JSONL line that is not valid JSON becomes a
record carrying its error, so a lenient reader can skip it and keep the rest of the file.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from efficientrag.errors import DataFormatError, not_a_file
from efficientrag.jsonl import not_utf8_message


@dataclass
class SourceRecord:
    """One record of a file: the parsed object, or the error that kept it from parsing."""

    index: int
    line: int | None
    obj: dict[str, Any] | None
    error: DataFormatError | None = None


def read_text(path: str | Path) -> str:
    path = Path(path)
    if not path.is_file():
        raise not_a_file(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # exc.start counts from after a BOM, if the file has one.
        start = exc.start + (3 if data.startswith(codecs.BOM_UTF8) else 0)
        line = data.count(b"\n", 0, start) + 1
        raise DataFormatError(path, not_utf8_message(exc, start - exc.start), line=line) from exc


def is_json_list(text: str) -> bool:
    return text.lstrip()[:1] == "["


def iter_records(path: str | Path, text: str | None = None) -> Iterator[SourceRecord]:
    """Records of a JSON-list or JSONL file. A broken JSON list raises at once (nothing to skip to)."""
    if text is None:
        text = read_text(path)
    if not text.strip():
        raise DataFormatError(path, "file is empty")
    if is_json_list(text):
        yield from _iter_json_list(path, text)
    else:
        yield from _iter_jsonl(path, text)


def parse_json(path: str | Path, text: str) -> Any:
    """A whole-file JSON document; invalid JSON fails naming the file, line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            path, f"not valid JSON ({exc.msg} at column {exc.colno})", line=exc.lineno
        ) from exc


def _iter_json_list(path: str | Path, text: str) -> Iterator[SourceRecord]:
    for i, obj in enumerate(parse_json(path, text)):
        if isinstance(obj, dict):
            yield SourceRecord(index=i, line=None, obj=obj)
        else:
            err = DataFormatError(path, f"expected a JSON object, got {type(obj).__name__}", record=i)
            yield SourceRecord(index=i, line=None, obj=None, error=err)


def _iter_jsonl(path: str | Path, text: str) -> Iterator[SourceRecord]:
    index = 0
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            err = DataFormatError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", line=lineno)
            yield SourceRecord(index=index, line=lineno, obj=None, error=err)
        else:
            if isinstance(obj, dict):
                yield SourceRecord(index=index, line=lineno, obj=obj)
            else:
                err = DataFormatError(path, f"expected a JSON object, got {type(obj).__name__}", line=lineno)
                yield SourceRecord(index=index, line=lineno, obj=None, error=err)
        index += 1
