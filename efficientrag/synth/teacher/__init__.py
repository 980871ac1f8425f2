"""Teachers: who answers the synthesis questions (decompose, label words, write next-hop queries).

A teacher named ``X`` lives in ``efficientrag.synth.teacher.X`` and exposes
``build_teacher(cfg: SynthConfig, corpus: Corpus) -> Teacher`` (protocol in ``base.py``); adding
one (the LLM teacher) is adding that module. ``annotations`` needs no LLM.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from efficientrag.errors import ConfigError
from efficientrag.synth.teacher.base import DependencyInfo, Extraction, Teacher

if TYPE_CHECKING:
    from efficientrag.data.corpus import Corpus
    from efficientrag.synth.config import SynthConfig

__all__ = ["DependencyInfo", "Extraction", "Teacher", "get_teacher"]


def get_teacher(cfg: SynthConfig, corpus: Corpus) -> Teacher:
    name = cfg.teacher
    if not name.isidentifier() or name in {"base", "paragraphs", "evidence", "relations"}:
        raise ConfigError(f"'teacher': {name!r} is not a teacher name (e.g. 'annotations')")
    module_name = f"{__name__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ConfigError(f"'teacher': no teacher {name!r} (no module {module_name})") from None
    builder = getattr(module, "build_teacher", None)
    if builder is None:
        raise ConfigError(f"'teacher': module {module_name} has no build_teacher(cfg, corpus)")
    return builder(cfg, corpus)
