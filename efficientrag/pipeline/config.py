"""Settings of the EfficientRAG retrieval loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class EfficientRAGConfig:
    """Defaults follow the official inference script where it has one (top-k 10, 4 hops). Input
    lengths default to the length each model was trained with (recorded in its saved folder): the
    official script infers the Filter at 128 tokens after training it at 256, a mismatch we do not
    copy."""

    labeler: str | None = None
    filter: str | None = None
    top_k: int = 10
    max_hops: int = 4
    # "merged": one next query per question and hop from all Continue chunks (official code);
    # "branch": one next query per Continue chunk (the paper's Figure 3), at most max_branches.
    query_mode: Literal["merged", "branch"] = "merged"
    max_branches: int = 4
    tag_threshold: float = 0.5
    token_threshold: float = 0.5
    filter_threshold: float = 0.5
    # Stop adding chunks once a question holds this many (None: no budget).
    chunk_budget: int | None = None
    batch_size: int = 32
    # None: the saved model's training length; set a number to override it.
    labeler_max_length: int | None = None
    filter_max_length: int | None = None
    device: str | None = None
