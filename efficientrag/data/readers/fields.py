"""Typed access to record fields that fails with the file, line/record and field it was reading."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from efficientrag.data.errors import DataFormatError

_EXPECTED = {str: "a string", list: "a list", dict: "an object", bool: "true/false", int: "an integer"}
_GOT = {**_EXPECTED, bool: "a boolean", float: "a number", type(None): "null"}


@dataclass
class Where:
    """The position of the record being read; ``record`` becomes the record's id once known."""

    path: str
    line: int | None
    record: str | int | None

    def error(self, message: str, field: str | None = None) -> DataFormatError:
        return DataFormatError(self.path, message, line=self.line, record=self.record, field=field)


def check_type(where: Where, value: Any, tp: type | tuple[type, ...], field: str) -> Any:
    types = tp if isinstance(tp, tuple) else (tp,)
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        expected = " or ".join(_EXPECTED.get(t, t.__name__) for t in types)
        raise where.error(f"expected {expected}, got {_GOT.get(type(value), type(value).__name__)}", field)
    return value


def require(
    where: Where, obj: dict[str, Any], key: str, tp: type | tuple[type, ...], field: str | None = None
) -> Any:
    field = field or key
    if key not in obj:
        raise where.error("missing field", field)
    return check_type(where, obj[key], tp, field)


def optional(
    where: Where,
    obj: dict[str, Any],
    key: str,
    tp: type | tuple[type, ...],
    default: Any,
    field: str | None = None,
) -> Any:
    if obj.get(key) is None:
        return default
    return check_type(where, obj[key], tp, field or key)


def require_text(where: Where, obj: dict[str, Any], key: str, what: str, field: str | None = None) -> str:
    """A string field that must say something (a question, an answer)."""
    value = require(where, obj, key, str, field)
    if not value.strip():
        raise where.error(f"empty {what}", field or key)
    return value


def require_id(where: Where, obj: dict[str, Any], key: str) -> str:
    """Record ids are strings in every dataset; integer ids (user files) are accepted as text."""
    if key not in obj:
        raise where.error("missing field", key)
    value = obj[key]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    check_type(where, value, str, key)
    if not value.strip():
        raise where.error("empty id", key)
    where.record = value
    return value


def string_list(where: Where, value: Any, field: str) -> list[str]:
    check_type(where, value, list, field)
    for i, item in enumerate(value):
        check_type(where, item, str, f"{field}[{i}]")
    return value


def unique_answers(answers: list[str]) -> list[str]:
    """First answer first, later duplicates and blanks dropped."""
    out: list[str] = []
    for a in answers:
        if a.strip() and a not in out:
            out.append(a)
    return out


def chunk_id(example_id: str, idx: int) -> str:
    """The official EfficientRAG corpus id scheme: ``"{sample_id}-{idx:02d}"``."""
    return f"{example_id}-{idx:02d}"
