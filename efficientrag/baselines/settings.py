"""The base of every section under ``baselines:``.

A section is a dataclass of plain fields. A number's allowed range sits next to its default
(``top_k: int = bounded(10, low=1)``, :func:`efficientrag.setting_fields.bounded`) and a choice is a
``Literal`` type; both are checked when the section is built, from YAML through the config loader
or in Python, so a bad value fails at once and names its field.
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.setting_fields import check_settings


@dataclass
class Settings:
    """Base of every section under ``baselines:``: one per method, plus ``prompts`` and ``judge``."""

    def __post_init__(self) -> None:
        check_settings(self)
