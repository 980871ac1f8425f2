"""One Accelerate training loop for the Labeler and the Filter (see docs/training.md).

``train`` is imported lazily so that reading a config does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from efficientrag.training.config import TrainConfig, load_train_config

if TYPE_CHECKING:
    from efficientrag.training.loop import train

__all__ = ["TrainConfig", "load_train_config", "train"]


def __getattr__(name: str) -> Any:
    if name == "train":
        from efficientrag.training.loop import train

        return train
    raise AttributeError(f"module 'efficientrag.training' has no attribute {name!r}")
