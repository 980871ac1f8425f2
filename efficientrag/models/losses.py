"""Training loss of the token head and the tag head (Labeler: their sum, as in the official code).

Default: token cross-entropy over target-word sub-words only (labels -100 elsewhere), plus tag
cross-entropy; optional class weights apply to the token loss.

``compat=True`` reproduces the official ``labeler_training.py`` loss:

* positions outside the chunk (query, special, padding) are labelled 0 by the collator and count as
  negatives;
* the token loss is taken only over rows whose *predicted* tag is Continue (argmax ≠ Terminate);
  rows predicted Terminate contribute nothing (their weight is zero, so the graph stays connected
  and DDP sees every parameter used);
* the class-weight vector, when given, weights both the token and the tag cross-entropy.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from efficientrag.models.batching import IGNORE_INDEX
from efficientrag.models.inputs import TAG_TERMINATE, TAGS

TERMINATE = TAGS.index(TAG_TERMINATE)


@dataclass
class LossParts:
    total: torch.Tensor
    token: torch.Tensor
    tag: torch.Tensor | None


def compute_loss(
    outputs: dict[str, torch.Tensor],
    batch: dict[str, torch.Tensor],
    *,
    compat: bool = False,
    class_weights: torch.Tensor | None = None,
) -> LossParts:
    token_logits = outputs["token_logits"].float()
    labels = batch["labels"]
    weight = class_weights.to(token_logits.device, torch.float32) if class_weights is not None else None
    tag_logits = outputs.get("tag_logits")
    if compat and tag_logits is not None:
        rows = (tag_logits.detach().argmax(dim=-1) != TERMINATE).to(token_logits.dtype)
        token = _weighted_token_loss(token_logits, labels, weight, rows)
    else:
        token = _weighted_token_loss(token_logits, labels, weight, None)
    if tag_logits is None:
        return LossParts(total=token, token=token, tag=None)
    tag = F.cross_entropy(tag_logits.float(), batch["tags"], weight=weight if compat else None)
    return LossParts(total=token + tag, token=token, tag=tag)


def _weighted_token_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    weight: torch.Tensor | None,
    row_weight: torch.Tensor | None,
) -> torch.Tensor:
    """Mean cross-entropy over counted positions (weighted mean when class weights are given)."""
    flat_logits = logits.reshape(-1, logits.shape[-1])
    flat_labels = labels.reshape(-1)
    per_token = F.cross_entropy(
        flat_logits, flat_labels, weight=weight, ignore_index=IGNORE_INDEX, reduction="none"
    )
    counted = (flat_labels != IGNORE_INDEX).to(logits.dtype)
    if weight is not None:
        counted = counted * weight[flat_labels.clamp(min=0)]
    if row_weight is not None:
        counted = counted * row_weight.repeat_interleave(labels.shape[1])
        per_token = per_token * (row_weight.repeat_interleave(labels.shape[1]) > 0)
    denominator = counted.sum()
    # With nothing to count (all rows predicted Terminate, or no target words) the loss is an
    # exact zero that still depends on the logits, so backward() and DDP work unchanged.
    return (per_token.sum() / denominator) if denominator > 0 else (logits.sum() * 0.0)
