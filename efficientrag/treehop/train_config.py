"""The old home of TreeHop's training settings: they are in :mod:`efficientrag.treehop.config` now,
beside the retrieval settings (``configuration.py`` holds only the network's ``transformers`` config).
Re-exported here so ``from efficientrag.treehop.train_config import TreeHopTrainConfig`` keeps working."""

from __future__ import annotations

from efficientrag.treehop.config import DATA_ORDER_KEYS, TreeHopModelSettings, TreeHopTrainConfig

__all__ = ["DATA_ORDER_KEYS", "TreeHopModelSettings", "TreeHopTrainConfig"]
