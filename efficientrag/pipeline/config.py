"""Settings of the EfficientRAG retrieval loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class EfficientRAGConfig:
    """Defaults follow the official inference script where it has one (top-k 10, 4 hops, 384-token
    Labeler input); the Filter reads 256 tokens, the length it was trained with (the official
    script infers with 128, a mismatch we do not copy)."""

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
    labeler_max_length: int = 384
    filter_max_length: int = 256
    device: str | None = None
