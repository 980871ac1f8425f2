"""One Accelerate training loop for the Labeler and the Filter (see docs/training.md).

``train`` and ``load_training_set`` are imported lazily so that reading a config does not import
torch or datasets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.lazy import by_module, lazy_exports
from efficientrag.training.config import TrainConfig, load_train_config

if TYPE_CHECKING:
    from efficientrag.training.loop import train
    from efficientrag.training.training_set import load_training_set

__all__ = ["TrainConfig", "load_train_config", "load_training_set", "train"]

_LAZY = by_module(__name__, {"loop": ("train",), "training_set": ("load_training_set",)})

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
