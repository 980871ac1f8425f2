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
    "LabelerConfig": "efficientrag.models.configuration",
    "FilterConfig": "efficientrag.models.configuration",
    "LabelerModel": "efficientrag.models.network",
    "FilterModel": "efficientrag.models.network",
    "TrainingRecord": "efficientrag.models.card",
    "convert_folder": "efficientrag.models.legacy",
}

if TYPE_CHECKING:
    from efficientrag.models.card import TrainingRecord
    from efficientrag.models.configuration import FilterConfig, LabelerConfig
    from efficientrag.models.filter import Filter, FilterPrediction
    from efficientrag.models.labeler import Labeler, LabelerPrediction
    from efficientrag.models.legacy import convert_folder
    from efficientrag.models.network import FilterModel, LabelerModel
    from efficientrag.models.spec import ModelSpec

__all__ = [
    "Filter",
    "FilterConfig",
    "FilterModel",
    "FilterPrediction",
    "Labeler",
    "LabelerConfig",
    "LabelerModel",
    "LabelerPrediction",
    "ModelSpec",
    "TrainingRecord",
    "convert_folder",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'efficientrag.models' has no attribute {name!r}")
