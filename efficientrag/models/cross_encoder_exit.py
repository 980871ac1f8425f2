"""The cross-encoder's early exit: the Labeler's technique (:mod:`efficientrag.models.early_exit`)
applied to the ``rerank`` method's scorer, so that a comparison of the two stays at equal technique.

Heads after early layers of the cross-encoder's encoder read the states there, mean-pooled over the
pair's tokens, and predict the cross-encoder's own logit of the pair twice: its expected value and
an upper quantile (fit on the cross-encoder's outputs, :mod:`efficientrag.training.cross_encoder_exit`;
the cross-encoder is not changed). A pair whose upper estimate, through the cross-encoder's own
activation, is below the threshold leaves at the first layer where it is, with the expected estimate
as its score; every other pair goes on from the states already computed, and its score is the
cross-encoder's. The heads live in the cross-encoder folder's ``early_exit/`` (the format the
Labeler's use), bound to the folder's digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.early_exit import MEAN, SPLIT_TOLERANCE, UPPER, EarlyExit, StagedEncoder, with_child
from efficientrag.models.modeling import pool_states

# The pooling the cross-encoder's exit heads read (its own head reads the first token after a
# pooler that early states were not trained for; the mean of the pair's tokens carries more).
POOLING = "mean"


class StagedCrossEncoder:
    """A sentence-transformers ``CrossEncoder`` run in stages that share its weights, cut after each
    of ``layers``; the last stage ends in the model's own classification head.

    Args:
        model: A loaded ``CrossEncoder`` (a ``transformers`` sequence-classification model inside).
        layers: The cuts (increasing, in 1 .. depth - 1).
    """

    def __init__(self, model: Any, layers: Sequence[int]) -> None:
        network = model.model
        prefix = getattr(network, "base_model_prefix", "")
        if not prefix or not isinstance(getattr(network, prefix, None), torch.nn.Module):
            raise InvalidArgumentError(
                f"{type(network).__name__} has no base model to run in stages: no early exit for it"
            )
        self.model = model
        self.staged = StagedEncoder(getattr(network, prefix), layers)
        self.head = with_child(network, prefix, self.staged.stages[-1])

    def first(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The states after the first cut."""
        return self.staged.first(inputs)

    def next(self, stage: int, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Stage ``stage`` (1 .. cuts - 1) from the previous stage's states."""
        return self.staged.next(stage, states, attention_mask)

    def logits(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The last stage and the classification head: the cross-encoder's logit per pair, float32."""
        return self.head(inputs_embeds=states, attention_mask=attention_mask).logits[:, 0].float()


def tokenize_pairs(model: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """``pairs`` as the cross-encoder reads them (cut at its ``max_length``), on its device."""
    batch = model.tokenizer(
        [q for q, _ in pairs],
        [p for _, p in pairs],
        padding=True,
        truncation=True,
        max_length=model.max_length,
        return_tensors="pt",
    )
    return {k: v.to(model.device) for k, v in batch.items()}


def activation(model: Any, logits: torch.Tensor) -> torch.Tensor:
    """The cross-encoder's own output activation (a sigmoid for a one-logit reranker) on ``logits``."""
    fn = getattr(model, "activation_fn", None)
    return fn(logits) if fn is not None else logits


def check_cross_encoder_split(model: Any, layers: Sequence[int]) -> None:
    """Refuse a cross-encoder whose stages do not compute what it computes whole, on a short pair.

    Raises:
        InvalidArgumentError: The staged logit differs from the whole model's.
    """
    network = model.model
    inputs = tokenize_pairs(model, [("a short question", "and a short passage to read")])
    was_training = network.training
    network.eval()
    try:
        with torch.inference_mode():
            whole = network(**inputs).logits[:, 0].float()
            staged = StagedCrossEncoder(model, layers)
            states = staged.first(inputs)
            for k in range(1, len(layers)):
                states = staged.next(k, states, inputs["attention_mask"])
            split = staged.logits(states, inputs["attention_mask"])
    finally:
        network.train(was_training)
    gap = float((whole - split).abs().max())
    if not gap <= SPLIT_TOLERANCE * max(1.0, float(whole.abs().max())):
        raise InvalidArgumentError(
            f"{type(network).__name__} run in stages cut after layers {list(layers)} differs from the whole "
            f"cross-encoder by {gap:.2e}: its layers cannot be split for an early exit"
        )


def score_with_exit(
    model: Any,
    early_exit: EarlyExit,
    pairs: Sequence[tuple[str, str]],
    *,
    exit_below: float,
    batch_size: int,
) -> list[tuple[float, int | None]]:
    """Score every (query, passage) pair, letting one whose upper estimate is below ``exit_below``
    leave at the first exit layer where it is.

    Pairs are batched longest first; in a batch, the pairs that go on continue from their stored
    states as a smaller batch.

    Args:
        model: The loaded ``CrossEncoder``.
        early_exit: Its exit heads (:func:`efficientrag.models.early_exit.load_early_exit` on its folder).
        pairs: The (query, passage text) pairs.
        exit_below: A pair whose upper estimate, through the cross-encoder's activation, is below
            this leaves.
        batch_size: Pairs per first-stage forward pass.

    Returns:
        Per pair, in order: its score (the cross-encoder's, or the estimate it left with) and the
        layer it left at (None: judged in full).
    """
    staged = StagedCrossEncoder(model, early_exit.layers)
    network = model.model
    order = sorted(range(len(pairs)), key=lambda i: -len(pairs[i][0]) - len(pairs[i][1]))
    out: list[tuple[float, int | None]] = [(0.0, None)] * len(pairs)
    was_training = network.training
    network.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                ids = order[start : start + batch_size]
                inputs = tokenize_pairs(model, [pairs[i] for i in ids])
                mask = inputs["attention_mask"]
                states = staged.first(inputs)
                for k, layer in enumerate(early_exit.layers):
                    if k:
                        states = staged.next(k, states, mask)
                    estimate = early_exit.heads[layer](pool_states(states.float(), mask, None, POOLING))
                    leaving = activation(model, estimate[:, UPPER]) < exit_below
                    scores = activation(model, estimate[:, MEAN])
                    for row in leaving.nonzero().flatten().tolist():
                        out[ids[row]] = (float(scores[row]), layer)
                    keep = (~leaving).nonzero().flatten()
                    ids, states, mask = [ids[r] for r in keep.tolist()], states[keep], mask[keep]
                    if not ids:
                        break
                if ids:
                    final = activation(model, staged.logits(states, mask))
                    for row, i in enumerate(ids):
                        out[i] = (float(final[row]), None)
    finally:
        network.train(was_training)
    return out
