"""Sub-word probabilities back to one probability per word, for a whole batch at once.

``first`` reads the word's first sub-word (the usual token-classification convention), ``mean``
averages all its sub-words, ``max`` takes the most confident one. Word slots with no position
(words cut by truncation, or words a tokenizer encodes to nothing) get 0.0.
"""

from __future__ import annotations

import torch

from efficientrag.models.spec import WORD_AGGREGATIONS


def word_scores(
    probs: torch.Tensor, word_ids: torch.Tensor, n_slots: int, how: str = "first"
) -> torch.Tensor:
    """``probs`` and ``word_ids`` are ``[batch, positions]``; returns ``[batch, n_slots]``."""
    if how not in WORD_AGGREGATIONS:
        raise ValueError(f"word aggregation must be one of {WORD_AGGREGATIONS}, got {how!r}")
    probs = probs.float()
    batch = probs.shape[0]
    n_slots = max(int(n_slots), 1)
    valid = (word_ids >= 0) & (word_ids < n_slots)
    index = torch.where(valid, word_ids, torch.zeros_like(word_ids))
    zeros = torch.zeros(batch, n_slots, dtype=probs.dtype, device=probs.device)
    if how == "max":
        return zeros.scatter_reduce(1, index, probs * valid, reduce="amax", include_self=True)
    if how == "first":
        previous = torch.nn.functional.pad(word_ids[:, :-1], (1, 0), value=-1)
        valid = valid & (word_ids != previous)
    weight = valid.to(probs.dtype)
    sums = zeros.scatter_add(1, index, probs * weight)
    counts = torch.zeros_like(zeros).scatter_add(1, index, weight)
    return sums / counts.clamp(min=1.0)
