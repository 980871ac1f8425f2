"""Typed access to record fields that fails with the file, line/record and field it was reading."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from efficientrag.errors import DataFormatError
from efficientrag.text.validity import text_problem

_EXPECTED = {str: "a string", list: "a list", dict: "an object", bool: "true/false", int: "an integer"}
_GOT = {**_EXPECTED, bool: "a boolean", float: "a number", type(None): "null"}

Types = type | tuple[type, ...]


@dataclass
class Where:
    """The position of the record being read; ``record`` becomes the record's id once known.

    Every field access of a reader goes through it, so every error names the file, the line or
    record, and the field."""

    path: str
    line: int | None
    record: str | int | None

    def error(self, message: str, field: str | None = None) -> DataFormatError:
        return DataFormatError(self.path, message, line=self.line, record=self.record, field=field)

    def check_type(self, value: Any, tp: Types, field: str) -> Any:
        types = tp if isinstance(tp, tuple) else (tp,)
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            expected = " or ".join(_EXPECTED.get(t, t.__name__) for t in types)
            raise self.error(f"expected {expected}, got {_GOT.get(type(value), type(value).__name__)}", field)
        return value

    def require(self, obj: dict[str, Any], key: str, tp: Types, field: str | None = None) -> Any:
        field = field or key
        if key not in obj:
            raise self.error("missing field", field)
        return self.check_type(obj[key], tp, field)

    def optional(
        self, obj: dict[str, Any], key: str, tp: Types, default: Any, field: str | None = None
    ) -> Any:
        if obj.get(key) is None:
            return default
        return self.check_type(obj[key], tp, field or key)

    def require_text(self, obj: dict[str, Any], key: str, what: str, field: str | None = None) -> str:
        """A string field that must say something (a question, an answer)."""
        value = self.require(obj, key, str, field)
        problem = text_problem(value)
        if problem is not None:
            raise self.error(f"empty {what}" if problem == "empty" else f"{what}: {problem}", field or key)
        return value

    def require_id(self, obj: dict[str, Any], key: str) -> str:
        """Record ids are strings in every dataset; integer ids (user files) are accepted as text."""
        if key not in obj:
            raise self.error("missing field", key)
        value = obj[key]
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        self.check_type(value, str, key)
        if not value.strip():
            raise self.error("empty id", key)
        self.record = value
        return value

    def each_item(
        self, items: list[Any], field: str, tp: Types, *, empty: str | None = None
    ) -> Iterator[tuple[str, Any]]:
        """``(field name, item)`` for every item of the list ``items`` (read from ``field``), each
        checked to be a ``tp``; ``empty`` is the error for an empty list (None: it may be empty)."""
        if empty is not None and not items:
            raise self.error(empty, field)
        for i, item in enumerate(items):
            name = f"{field}[{i}]"
            yield name, self.check_type(item, tp, name)

    def string_list(self, value: Any, field: str) -> list[str]:
        for _ in self.each_item(self.check_type(value, list, field), field, str):
            pass
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
