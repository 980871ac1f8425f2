"""Records (dataclasses written as JSONL lines) read back from their dicts, by their field types.

One reader instead of a hand-written ``from_dict`` per record: a field with no default must be in
the line (``KeyError`` naming it, which the JSONL readers turn into a file:line error); a field with
a default, or one named in ``optional``, may be missing or null. Scalars are converted to the
field's type, lists element by element, dicts copied, and nested records read through their own
``from_dict``. So a record file written by an older version (ints as floats, a missing optional
list) reads the same as it always did.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Collection, Mapping
from typing import Any, ClassVar, TypeVar

from efficientrag.errors import MissingKeyError

R = TypeVar("R")
J = TypeVar("J", bound="JsonRecord")


class JsonRecord:
    """A dataclass written as one JSONL line (``to_dict``, keys in field order) and read back with
    :func:`record_from_dict`; ``optional_fields`` may be missing from old lines."""

    optional_fields: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        """The record as one JSONL line.

        Returns:
            Its fields in declaration order, nested records as dicts.
        """
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[J], d: Mapping[str, Any]) -> J:
        """Read a record back from its line, converting each value to its field's type.

        Args:
            d: The parsed JSONL line; fields with a default or listed in ``optional_fields`` may be
                missing or null.

        Returns:
            The record.

        Raises:
            KeyError: A required field is missing (named by the error).
        """
        return record_from_dict(cls, d, optional=cls.optional_fields)


def record_from_dict(cls: type[R], d: Mapping[str, Any], *, optional: Collection[str] = ()) -> R:
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        value = d.get(f.name)
        if value is not None:
            kwargs[f.name] = _convert(value, hints[f.name])
        elif f.name in optional:
            kwargs[f.name] = _convert(_empty(hints[f.name]), hints[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise MissingKeyError(f.name)
    return cls(**kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return [_convert(x, item) for x in value]
    if origin is dict or hint is dict:
        return dict(value)
    if hint in (str, int, float, bool):
        return hint(value)
    if dataclasses.is_dataclass(hint) and hasattr(hint, "from_dict"):
        return hint.from_dict(value)
    return value


def _empty(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is list:
        return []
    if origin is dict or hint is dict:
        return {}
    return hint() if hint in (str, int, float, bool) else None
