"""How every section under ``baselines:`` is written and checked.

A section is a dataclass of plain fields. A number's allowed range sits next to its default
(``top_k: int = bounded(10, low=1)``) and a choice is a ``Literal`` type; both are checked when the
section is built, from YAML through the config loader or in Python, so a bad value fails at once and
names its field. A subclass that only changes a default keeps the range its base declared.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

_RANGE = "range"


def bounded(default: Any, *, low: float | None = None, high: float | None = None) -> Any:
    """A field whose value, unless None, must lie in [low, high] (None: no limit on that side)."""
    return field(default=default, metadata={_RANGE: (low, high)})


@dataclass
class Settings:
    """Base of every section under ``baselines:``: one per method, plus ``prompts`` and ``judge``."""

    # What error messages put in front of a field name (e.g. "baselines.prompts").
    section: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            name = f"{self.section}.{f.name}" if self.section else f.name
            choices = typing.get_args(hints[f.name]) if typing.get_origin(hints[f.name]) is Literal else ()
            if choices and value not in choices:
                raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
            low, high = _declared_range(type(self), f.name)
            if value is None:
                continue
            if low is not None and high is not None and not low <= value <= high:
                raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {value}")
            if low is not None and value < low:
                raise ValueError(f"{name} must be >= {low:g}, got {value}")
            if high is not None and value > high:
                raise ValueError(f"{name} must be <= {high:g}, got {value}")


def _declared_range(cls: type, name: str) -> tuple[float | None, float | None]:
    """The range of field ``name`` as the nearest class in the MRO that gave one declared it."""
    for klass in cls.__mro__:
        declared = getattr(klass, "__dataclass_fields__", {}).get(name)
        if declared is not None and _RANGE in declared.metadata:
            return declared.metadata[_RANGE]
    return None, None
