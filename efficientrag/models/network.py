"""The trainable network: any Hugging Face encoder, a token head and (Labeler) a tag head.

The forward pass takes only model inputs and returns logits; losses live in
:mod:`efficientrag.models.losses`, so the same module trains under DDP/DeepSpeed and predicts.
The tag head reads the mean of the non-padding token states (the paper) or the first token (the
official code's ``ContextPooler``), followed by a small dense layer. ``pair`` pooling (ours) reads
the query's and the chunk's mean states separately and feeds ``[q, c, q*c, |q-c|]`` to the head:
a backbone trained as a bi-encoder (MiniLM) already places related texts close, and these
features let a few thousand rows teach the head to use that, where a pooled mix of both does not
(docs/training.md, "Tag-head pooling").
"""

from __future__ import annotations

import inspect

import torch
from torch import nn
from transformers import PreTrainedModel

from efficientrag.models.encoding import SEG_QUERY, SEG_TARGET

# The batch keys the forward pass takes (the collator also carries word maps, labels, indices).
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "segment_ids")


class TokenClassifierNetwork(nn.Module):
    def __init__(
        self,
        backbone: PreTrainedModel,
        *,
        tag_head: bool,
        pooling: str = "mean",
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        hidden = _hidden_size(backbone.config)
        self.backbone = backbone
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.token_head = nn.Linear(hidden, 2)
        width = 4 * hidden if pooling == "pair" else hidden
        self.tag_head = (
            nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, 2))
            if tag_head
            else None
        )
        params = inspect.signature(backbone.forward).parameters
        self._takes_token_types = "token_type_ids" in params
        std = float(getattr(backbone.config, "initializer_range", 0.02) or 0.02)
        for module in [self.token_head, *(self.tag_head or [])]:
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=std)
                nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self._takes_token_types:
            kwargs["token_type_ids"] = token_type_ids
        states = self.backbone(**kwargs).last_hidden_state
        out = {"token_logits": self.token_head(self.dropout(states))}
        if self.tag_head is not None:
            pooled = self._pool(states, attention_mask, segment_ids)
            out["tag_logits"] = self.tag_head(self.dropout(pooled))
        return out

    def _pool(
        self, states: torch.Tensor, attention_mask: torch.Tensor, segment_ids: torch.Tensor | None
    ) -> torch.Tensor:
        if self.pooling == "first":
            return states[:, 0]
        if self.pooling == "pair":
            if segment_ids is None:
                raise ValueError("pair pooling needs segment_ids (the collator provides them)")
            q = _masked_mean(states, segment_ids == SEG_QUERY)
            c = _masked_mean(states, segment_ids == SEG_TARGET)
            return torch.cat([q, c, q * c, (q - c).abs()], dim=-1)
        return _masked_mean(states, attention_mask.bool())


def _masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


def _hidden_size(config) -> int:
    for name in ("hidden_size", "d_model", "dim"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError(f"cannot tell the hidden size of backbone config {type(config).__name__}")
