"""The trainable networks, as ``transformers`` models: any HF encoder, a token head and (Labeler) a tag head.

:class:`LabelerModel` and :class:`FilterModel` are ``PreTrainedModel`` subclasses, so a saved folder is
a standard one (``config.json`` + ``model.safetensors``) that ``AutoModel.from_pretrained`` loads and
``push_to_hub`` shares. The encoder is built from the nested ``config.encoder_config`` (never
downloaded), or handed in already trained by :meth:`WordClassifier.from_backbone`.

The forward pass takes only model inputs and returns logits; the training loss is a function of
those logits (:func:`compute_loss`, below), so the same module trains under DDP/DeepSpeed and
predicts.
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
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.configuration import FilterConfig, LabelerConfig, WordClassifierConfig
from efficientrag.models.inputs import IGNORE_INDEX, SEG_QUERY, SEG_TARGET, TAG_TERMINATE, TAGS

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
        """Build the heads on an encoder, so a saved folder rebuilds without downloading anything.

        Args:
            config: The model's config; its kind decides whether there is a tag head.
            backbone: A (pre-trained) encoder to use; None builds a fresh one from
                ``config.encoder_config`` (weights then come from ``from_pretrained``).

        Raises:
            ValueError: No backbone and no ``encoder_config`` to build one from.
        """
        super().__init__(config)
        if backbone is None:
            if config.encoder_config is None:
                raise InvalidArgumentError(
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

        Args:
            *args: ``PreTrainedModel.from_pretrained``'s positional arguments (the folder or Hub name).
            **kwargs: Its keyword arguments.

        Returns:
            The loaded network, or ``(network, loading info)`` with ``output_loading_info=True``.
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
        """Logits for one padded batch (the loss is :func:`compute_loss`, outside the module).

        Args:
            input_ids: Token ids, (batch, tokens).
            attention_mask: 1 for real tokens, 0 for padding, (batch, tokens).
            token_type_ids: Segment ids for encoders that take them (ignored by those that do not).
            segment_ids: Which tokens are query and which target, (batch, tokens); needed by
                ``pair`` pooling only.

        Returns:
            ``token_logits`` (batch, tokens, 2) and, Labeler only, ``tag_logits`` (batch, 2) with
            Continue as class 0.

        Raises:
            ValueError: ``pair`` pooling without ``segment_ids``.
        """
        states = self.backbone(
            **self.backbone_inputs(input_ids, attention_mask, token_type_ids)
        ).last_hidden_state
        return self.read_heads(states, attention_mask, segment_ids)

    def backbone_inputs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """The encoder's keyword arguments: segment ids only for an encoder that takes them.

        Args:
            input_ids: Token ids, (batch, tokens).
            attention_mask: 1 for real tokens, 0 for padding.
            token_type_ids: Segment ids (dropped for an encoder that takes none).

        Returns:
            The keyword arguments of the backbone's forward pass.
        """
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self._takes_token_types:
            kwargs["token_type_ids"] = token_type_ids
        return kwargs

    def read_heads(
        self, states: torch.Tensor, attention_mask: torch.Tensor, segment_ids: torch.Tensor | None = None
    ) -> WordClassifierOutput:
        """The heads over the encoder's last states: what :meth:`forward` returns, for a caller that
        ran the encoder itself (the Labeler's early exit runs its layers in two stages).

        Args:
            states: The encoder's last hidden states, (batch, tokens, hidden).
            attention_mask: 1 for real tokens, 0 for padding, (batch, tokens).
            segment_ids: Which tokens are query and which target (``pair`` pooling).

        Returns:
            As :meth:`forward`.
        """
        out = WordClassifierOutput(token_logits=self.token_head(self.dropout(states)))
        if self.tag_head is not None:
            pooled = pool_states(states, attention_mask, segment_ids, self.pooling)
            out["tag_logits"] = self.tag_head(self.dropout(pooled))
        return out


class LabelerModel(TokenClassifierNetwork):
    """Encoder + token head (useless/useful per chunk token) + tag head (Continue/Terminate per pair)."""

    config_class = LabelerConfig


class FilterModel(TokenClassifierNetwork):
    """Encoder + token head (drop/keep per token of ``Query: … Info: …``)."""

    config_class = FilterConfig


MODEL_CLASSES: dict[str, type[TokenClassifierNetwork]] = {
    cls.config_class.kind: cls for cls in (LabelerModel, FilterModel)
}


def register_models() -> None:
    """Make ``AutoModel`` build our classes from our configs (idempotent)."""
    for model_cls in MODEL_CLASSES.values():
        AutoModel.register(model_cls.config_class, model_cls, exist_ok=True)


def align_parameters(module: nn.Module, alignment: int = 64) -> None:
    """Copy CPU parameters and buffers that do not start on an ``alignment``-byte boundary."""
    for tensor in [*module.parameters(), *module.buffers()]:
        if tensor.device.type == "cpu" and tensor.numel() and tensor.data_ptr() % alignment:
            tensor.data = tensor.data.clone()


def pool_states(
    states: torch.Tensor, attention_mask: torch.Tensor, segment_ids: torch.Tensor | None, pooling: str
) -> torch.Tensor:
    """One vector per input from its token states, as the tag head reads them.

    Args:
        states: Token states, (batch, tokens, hidden).
        attention_mask: 1 for real tokens, (batch, tokens).
        segment_ids: Query / target segments, (batch, tokens); ``pair`` pooling only.
        pooling: ``mean``, ``first`` or ``pair`` (``[q, c, q*c, |q-c|]``, 4x the hidden size).

    Returns:
        (batch, hidden), or (batch, 4 * hidden) for ``pair``.

    Raises:
        InvalidArgumentError: ``pair`` pooling without ``segment_ids``.
    """
    if pooling == "first":
        return states[:, 0]
    if pooling == "pair":
        if segment_ids is None:
            raise InvalidArgumentError("pair pooling needs segment_ids (the collator provides them)")
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
    raise InvalidArgumentError(f"cannot tell the hidden size of backbone config {type(config).__name__}")


# -- training loss ---------------------------------------------------------------------------------

TERMINATE = TAGS.index(TAG_TERMINATE)


@dataclass
class LossParts:
    """The token and tag heads' losses (Labeler: their sum, as in the official code); with
    distillation, also the divergence from the teacher (efficientrag/training/distill.py)."""

    total: torch.Tensor
    token: torch.Tensor
    tag: torch.Tensor | None
    divergence: torch.Tensor | None = None


def compute_loss(
    outputs: dict[str, torch.Tensor],
    batch: dict[str, torch.Tensor],
    *,
    compat: bool = False,
    class_weights: torch.Tensor | None = None,
) -> LossParts:
    """Token cross-entropy over target-word sub-words only (labels -100 elsewhere), plus (Labeler) tag
    cross-entropy; optional class weights apply to the token loss.

    ``compat=True`` reproduces the official ``labeler_training.py`` loss:

    * positions outside the chunk (query, special, padding) are labelled 0 by the collator and count
      as negatives;
    * the token loss is taken only over rows whose *predicted* tag is Continue (argmax != Terminate);
      rows predicted Terminate contribute nothing (their weight is zero, so the graph stays connected
      and DDP sees every parameter used);
    * the class-weight vector, when given, weights both the token and the tag cross-entropy.
    """
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


register_models()
