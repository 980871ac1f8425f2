"""Settings of TreeHop retrieval (the ``treehop:`` section of an experiment config).

Loaded without importing torch, so reading an experiment config stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PRUNING = ("top_k", "official", "none")


@dataclass
class TreeHopRetrievalConfig:
    """``top_k`` chunks per query and per layer, ``hops`` layers: at most top_k x hops chunks.

    The paper reports top_k 5 and 10 with 2 and 3 hops. ``pruning``: "top_k" keeps the layer's K
    best-scored candidates (the intended rule); "official" reproduces the official code's
    index-as-rank selection (docs/treehop.md); "none" keeps every candidate (ablation).
    ``redundancy`` drops candidates the question already output.
    """

    # A folder written by `accelerate launch train/treehop.py` (its best/ subfolder), or a Hub name.
    model: str | None = None
    top_k: int = 5
    hops: int = 2
    pruning: Literal["top_k", "official", "none"] = "top_k"
    redundancy: bool = True
    # None: cuda if available, else cpu.
    device: str | None = None
    # With eval.answer=true: the answer call's budget (it reads every chunk TreeHop returned).
    answer_max_new_tokens: int = 128

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.hops < 1:
            raise ValueError(f"need top_k >= 1 and hops >= 1, got {self.top_k}, {self.hops}")
        if self.pruning not in PRUNING:
            raise ValueError(f"pruning must be one of {PRUNING}, got {self.pruning!r}")
