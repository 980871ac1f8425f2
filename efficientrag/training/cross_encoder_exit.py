"""Fitting the cross-encoder's exit heads on its own outputs (:mod:`efficientrag.models.cross_encoder_exit`).

As for the Labeler (:mod:`efficientrag.training.exit_head`): one staged pass of the cross-encoder
over (query, passage) pairs gives every head's input (the mean-pooled states after its layer) and
the common target (the cross-encoder's logit after all of them); the heads, small networks, are fit
in seconds on the stored features. No label is read: a head learns what the cross-encoder says.
The Labeler's rows serve as pairs (their query and chunk words, joined), so the command that fits
the Labeler's heads fits these from the same file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from efficientrag.models.cross_encoder_exit import (
    POOLING,
    StagedCrossEncoder,
    check_cross_encoder_split,
    tokenize_pairs,
)
from efficientrag.models.early_exit import LOGIT_CLIP, EarlyExit
from efficientrag.models.inputs import LabelerRow
from efficientrag.models.modeling import pool_states
from efficientrag.training.exit_head import ExitHeadConfig, fit_heads


def pairs_from_rows(rows: Sequence[LabelerRow]) -> list[tuple[str, str]]:
    """The (query, passage) pairs of Labeler rows, their words joined by spaces."""
    return [(" ".join(r.query_words), " ".join(r.chunk_words)) for r in rows]


def collect_cross_encoder_features(
    model: Any,
    pairs: Sequence[tuple[str, str]],
    layers: Sequence[int],
    *,
    batch_size: int = 32,
    show_progress: bool = False,
) -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    """The pooled states after each of ``layers`` and the cross-encoder's logit, per pair.

    Args:
        model: The loaded ``CrossEncoder``.
        pairs: The (query, passage) pairs.
        layers: The exit layers.
        batch_size: Pairs per forward pass.
        show_progress: Show a progress bar.

    Returns:
        ``(features, logits)``: per layer (pairs, width), and (pairs,), float32 on the CPU, in order.
    """
    check_cross_encoder_split(model, layers)
    staged = StagedCrossEncoder(model, layers)
    network = model.model
    pooled: dict[int, list[torch.Tensor]] = {layer: [] for layer in layers}
    logits: list[torch.Tensor] = []
    was_training = network.training
    network.eval()
    try:
        bar = tqdm(total=len(pairs), desc="exit head features", disable=not show_progress, unit="pair")
        with torch.inference_mode():
            for start in range(0, len(pairs), batch_size):
                inputs = tokenize_pairs(model, pairs[start : start + batch_size])
                mask = inputs["attention_mask"]
                states = staged.first(inputs)
                for k, layer in enumerate(layers):
                    if k:
                        states = staged.next(k, states, mask)
                    pooled[layer].append(pool_states(states.float(), mask, None, POOLING).cpu())
                logits.append(staged.logits(states, mask).clamp(-LOGIT_CLIP, LOGIT_CLIP).cpu())
                bar.update(len(mask))
        bar.close()
    finally:
        network.train(was_training)
    return {layer: torch.cat(parts) for layer, parts in pooled.items()}, torch.cat(logits)


def fit_cross_encoder_exit(
    model: Any,
    pairs: Sequence[tuple[str, str]],
    cfg: ExitHeadConfig | None = None,
    *,
    show_progress: bool = False,
) -> EarlyExit:
    """Fit exit heads to the cross-encoder's own logits on ``pairs``.

    Args:
        model: The loaded ``CrossEncoder`` (left unchanged).
        pairs: The (query, passage) pairs to fit on (:func:`pairs_from_rows` of Labeler rows).
        cfg: How to fit (None: ``ExitHeadConfig()``).
        show_progress: Show a progress bar.

    Returns:
        The heads, with what the fit measured on the held-out pairs in ``fit``; ``save`` them into
        the cross-encoder's folder (``EarlyExit.save(folder)``).
    """
    cfg = cfg or ExitHeadConfig()
    pairs = list(pairs)[: cfg.max_rows] if cfg.max_rows else list(pairs)
    features, targets = collect_cross_encoder_features(
        model, pairs, cfg.layers, batch_size=cfg.predict_batch_size, show_progress=show_progress
    )
    heads, report = fit_heads(features, targets, cfg, model.device)
    return EarlyExit(heads, POOLING, cfg.quantile, fit=report)
