"""Labeler/Tagger and Filter token classifiers.

Names are imported lazily: ``efficientrag.models.inputs`` (the training-row contract used by
synthesis) must not pull in torch and transformers.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Labeler": "efficientrag.models.labeler",
    "LabelerPrediction": "efficientrag.models.labeler",
    "Filter": "efficientrag.models.filter",
    "FilterPrediction": "efficientrag.models.filter",
    "ModelSpec": "efficientrag.models.spec",
}

if TYPE_CHECKING:
    from efficientrag.models.filter import Filter, FilterPrediction
    from efficientrag.models.labeler import Labeler, LabelerPrediction
    from efficientrag.models.spec import ModelSpec

__all__ = ["Filter", "FilterPrediction", "Labeler", "LabelerPrediction", "ModelSpec"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'efficientrag.models' has no attribute {name!r}")
