"""The TreeHop update network: next query = q - c + P(G(q, c)), all in the encoder's vector space.

Subtracting the retrieved chunk ``c`` removes what it already covers; the gate ``G`` decides which
of the chunk's features (the bridge entity it names) move into the next query. Each head of ``G``
maps the query to a gate query, the chunk to a key and a value, multiplies query and key feature by
feature, and takes a softmax over the *features* (one-token attention used as a feature gate);
the gated value runs through pre-LayerNorm residual blocks and one linear layer, with the gated
value added back. ``P`` (bias-free) maps the concatenated heads back to the embedding width.

The forward pass returns the un-normalized next query: the tree search normalizes only the copy it
searches with and feeds the raw vector to the next hop, exactly as training does.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init

from efficientrag.errors import InvalidArgumentError
from efficientrag.treehop.configuration import TreeHopConfig


class ResidualBlock(nn.Module):
    """x + ReLU(Linear(LayerNorm(x)))."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.linear = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.linear(self.norm(x)))


class GateHead(nn.Module):
    """One head of the update gate (see the module docstring)."""

    def __init__(
        self, embed_dim: int, gate_dim: int, num_blocks: int, scale_dim: int, dropout: float
    ) -> None:
        super().__init__()
        self.query = nn.Linear(embed_dim, gate_dim)
        self.key = nn.Linear(embed_dim, gate_dim)
        self.value = nn.Linear(embed_dim, gate_dim)
        self.blocks = nn.Sequential(*(ResidualBlock(gate_dim) for _ in range(num_blocks)))
        self.out = nn.Linear(gate_dim, gate_dim)
        self.inv_scale = 1.0 / math.sqrt(scale_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query: torch.Tensor, chunk: torch.Tensor) -> torch.Tensor:
        logits = self.query(query) * self.key(chunk) * self.inv_scale
        gated = self.dropout(torch.softmax(logits, dim=-1)) * self.value(chunk)
        return self.out(self.blocks(gated)) + gated


class TreeHopNetwork(PreTrainedModel):
    """``forward(query, chunk)``: both ``(..., embed_dim)``; returns the next query, same shape.

    Args:
        config: The widths (heads, gate, blocks) and the encoder's embedding width.
    """

    config_class = TreeHopConfig
    base_model_prefix = "treehop"
    main_input_name = "query"

    def __init__(self, config: TreeHopConfig) -> None:
        super().__init__(config)
        scale_dim = config.gate_dim if config.score_scale == "gate" else config.embed_dim
        self.heads = nn.ModuleList(
            GateHead(config.embed_dim, config.gate_dim, config.num_blocks, scale_dim, config.dropout)
            for _ in range(config.num_heads)
        )
        self.project = nn.Linear(config.num_heads * config.gate_dim, config.embed_dim, bias=False)
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)

    def forward(self, query: torch.Tensor, chunk: torch.Tensor) -> torch.Tensor:
        """The next query vector: ``query - chunk + gate(query, chunk)``.

        Args:
            query: Query vectors, ``(..., embed_dim)``.
            chunk: The retrieved chunks' vectors, the same shape.

        Returns:
            The next query vectors, the same shape.

        Raises:
            ValueError: The shapes differ, or the width is not ``embed_dim``.
        """
        if query.shape != chunk.shape:
            raise InvalidArgumentError(
                f"query {tuple(query.shape)} and chunk {tuple(chunk.shape)} must have one shape"
            )
        if query.shape[-1] != self.config.embed_dim:
            raise InvalidArgumentError(
                f"vectors of width {query.shape[-1]} given to a TreeHop network of embed_dim "
                f"{self.config.embed_dim}"
            )
        gate = torch.cat([head(query, chunk) for head in self.heads], dim=-1)
        return query - chunk + self.project(gate)


AutoModel.register(TreeHopConfig, TreeHopNetwork, exist_ok=True)
