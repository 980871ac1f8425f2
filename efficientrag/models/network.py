"""The trainable networks, as ``transformers`` models: any HF encoder, a token head and (Labeler) a tag head.

:class:`LabelerModel` and :class:`FilterModel` are ``PreTrainedModel`` subclasses, so a saved folder is
a standard one (``config.json`` + ``model.safetensors``) that ``AutoModel.from_pretrained`` loads and
``push_to_hub`` shares. The encoder is built from the nested ``config.encoder_config`` (never
downloaded), or handed in already trained by :meth:`WordClassifier.from_backbone`.

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
from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from efficientrag.models.configuration import FilterConfig, LabelerConfig, WordClassifierConfig
from efficientrag.models.encoding import SEG_QUERY, SEG_TARGET

# The batch keys the forward pass takes (the collator also carries word maps, labels, indices).
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "segment_ids")


@dataclass
class WordClassifierOutput(ModelOutput):
    """``token_logits`` (batch, tokens, 2); ``tag_logits`` (batch, 2), Labeler only (Continue = 0)."""

    token_logits: torch.Tensor | None = None
    tag_logits: torch.Tensor | None = None


class TokenClassifierNetwork(PreTrainedModel):
    """Shared body of :class:`LabelerModel` and :class:`FilterModel`; the config class decides the heads."""

    config_class = WordClassifierConfig
    base_model_prefix = "backbone"
    supports_gradient_checkpointing = True
    # Attention is the encoder's; these let a requested implementation pass through to it.
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True

    def __init__(self, config: WordClassifierConfig, backbone: PreTrainedModel | None = None) -> None:
        super().__init__(config)
        if backbone is None:
            if config.encoder_config is None:
                raise ValueError(
                    f"{config.model_type} config has no 'encoder_config' to build the encoder from"
                )
            backbone = AutoModel.from_config(config.encoder_config, trust_remote_code=False)
        hidden = _hidden_size(backbone.config)
        self.backbone = backbone
        self.pooling = config.pooling
        self.dropout = nn.Dropout(config.dropout)
        self.token_head = nn.Linear(hidden, 2)
        width = 4 * hidden if config.pooling == "pair" else hidden
        self.tag_head = (
            nn.Sequential(
                nn.Linear(width, hidden), nn.GELU(), nn.Dropout(config.dropout), nn.Linear(hidden, 2)
            )
            if config.has_tag_head
            else None
        )
        params = inspect.signature(backbone.forward).parameters
        self._takes_token_types = "token_type_ids" in params
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """The heads only: the encoder is a sub-model, initialized (or loaded) by its own class."""
        if isinstance(module, nn.Linear):
            std = float(getattr(self.backbone.config, "initializer_range", 0.02) or 0.02)
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)

    @classmethod
    def from_pretrained(cls, *args, **kwargs):  # type: ignore[override]
        """``PreTrainedModel.from_pretrained``, with every CPU weight moved to aligned memory.

        Loaded tensors can start at any byte offset, and CPU matmul kernels are chosen by alignment,
        so an unaligned copy of a model predicts in the last bits differently from the model that was
        saved; aligned, a saved and reloaded model predicts identically.
        """
        loaded = super().from_pretrained(*args, **kwargs)
        # ``output_loading_info=True`` returns ``(model, info)``.
        align_parameters(loaded[0] if isinstance(loaded, tuple) else loaded)
        return loaded

    def get_input_embeddings(self) -> nn.Module:
        return self.backbone.get_input_embeddings()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
    ) -> WordClassifierOutput:
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self._takes_token_types:
            kwargs["token_type_ids"] = token_type_ids
        states = self.backbone(**kwargs).last_hidden_state
        out = WordClassifierOutput(token_logits=self.token_head(self.dropout(states)))
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


class LabelerModel(TokenClassifierNetwork):
    """Encoder + token head (useless/useful per chunk token) + tag head (Continue/Terminate per pair)."""

    config_class = LabelerConfig


class FilterModel(TokenClassifierNetwork):
    """Encoder + token head (drop/keep per token of ``Query: … Info: …``)."""

    config_class = FilterConfig


MODEL_CLASSES: dict[str, type[TokenClassifierNetwork]] = {"labeler": LabelerModel, "filter": FilterModel}


def register_models() -> None:
    """Make ``AutoModel`` build our classes from our configs (idempotent)."""
    for model_cls in MODEL_CLASSES.values():
        AutoModel.register(model_cls.config_class, model_cls, exist_ok=True)


def align_parameters(module: nn.Module, alignment: int = 64) -> None:
    """Copy CPU parameters and buffers that do not start on an ``alignment``-byte boundary."""
    for tensor in [*module.parameters(), *module.buffers()]:
        if tensor.device.type == "cpu" and tensor.numel() and tensor.data_ptr() % alignment:
            tensor.data = tensor.data.clone()


def _masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


def _hidden_size(config) -> int:
    for name in ("hidden_size", "d_model", "dim"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError(f"cannot tell the hidden size of backbone config {type(config).__name__}")


register_models()
