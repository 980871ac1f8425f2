"""Labeler/Tagger and Filter token classifiers, laid out as in ``transformers``.

``inputs`` (the model kinds and the training rows synthesis writes; no torch), ``configuration``
(the saved configs), ``tokenization`` (word <-> sub-word alignment, batching), ``modeling`` (the
networks and their loss), ``word_classifier`` (the base that runs either kind), ``pretrained``
(building, loading, saving and sharing one), ``wrappers`` (:class:`Labeler`, :class:`Filter`),
``model_folder`` (saved folders), ``card`` (their model card) and ``export`` (int8, bf16, ONNX Runtime).

Names are imported lazily: ``efficientrag.models.inputs`` must not pull in torch and transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from efficientrag.models.card import TrainingRecord
    from efficientrag.models.configuration import FilterConfig, LabelerConfig
    from efficientrag.models.inputs import KINDS
    from efficientrag.models.modeling import FilterModel, LabelerModel
    from efficientrag.models.wrappers import Filter, FilterPrediction, Labeler, LabelerPrediction

_EXPORTS = by_module(
    __name__,
    {
        "inputs": ("KINDS",),
        "wrappers": ("Labeler", "LabelerPrediction", "Filter", "FilterPrediction"),
        "configuration": ("LabelerConfig", "FilterConfig"),
        "modeling": ("LabelerModel", "FilterModel"),
        "card": ("TrainingRecord",),
    },
)
__all__ = [
    "KINDS",
    "Filter",
    "FilterConfig",
    "FilterModel",
    "FilterPrediction",
    "Labeler",
    "LabelerConfig",
    "LabelerModel",
    "LabelerPrediction",
    "TrainingRecord",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
