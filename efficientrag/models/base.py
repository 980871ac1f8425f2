"""What the Labeler and the Filter share: building, saving, loading and batched inference.

A model object holds the network, its tokenizer and its :class:`ModelSpec`; it is loaded once and
then called on whole batches (the pipeline never runs the network per item).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from safetensors.torch import load_model, save_model
from tqdm.auto import tqdm
from transformers import CONFIG_MAPPING, AutoModel, PreTrainedTokenizerBase

from efficientrag.hub import hub_offline, resolve_model_path
from efficientrag.models.batching import Collator
from efficientrag.models.encoding import EncodedInput
from efficientrag.models.network import MODEL_INPUTS, TokenClassifierNetwork
from efficientrag.models.spec import WEIGHTS_FILE, ModelSpec
from efficientrag.models.tokenizer_setup import load_tokenizer
from efficientrag.models.word_scores import word_scores

M = TypeVar("M", bound="WordClassifier")


class WordClassifier:
    """Base of :class:`~efficientrag.models.Labeler` and :class:`~efficientrag.models.Filter`."""

    kind: ClassVar[str] = ""
    default_max_length: ClassVar[int] = 384

    def __init__(
        self,
        network: TokenClassifierNetwork,
        tokenizer: PreTrainedTokenizerBase,
        spec: ModelSpec,
        device: str | torch.device | None = None,
    ) -> None:
        if spec.kind != self.kind:
            raise ValueError(f"{type(self).__name__} cannot hold a saved {spec.kind!r} model")
        self.network = network
        self.tokenizer = tokenizer
        self.spec = spec
        self.to(device)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_backbone(
        cls: type[M],
        name_or_path: str,
        *,
        pooling: str = "mean",
        max_length: int | None = None,
        word_aggregation: str = "first",
        dropout: float = 0.1,
        device: str | torch.device | None = None,
    ) -> M:
        """A fresh model on a pre-trained encoder (heads randomly initialized), ready to train."""
        path = resolve_model_path(name_or_path)
        local = hub_offline()
        backbone = AutoModel.from_pretrained(
            path, dtype=torch.float32, trust_remote_code=False, local_files_only=local
        )
        tokenizer = load_tokenizer(path, local_files_only=local)
        spec = ModelSpec(
            kind=cls.kind,
            backbone_model_type=backbone.config.model_type,
            backbone_config=backbone.config.to_dict(),
            backbone_name=name_or_path,
            pooling=pooling,
            max_length=max_length or cls.default_max_length,
            word_aggregation=word_aggregation,
            dropout=dropout,
        )
        _check_max_length(backbone.config, spec.max_length)
        network = TokenClassifierNetwork(
            backbone, tag_head=spec.has_tag_head, pooling=pooling, dropout=dropout
        )
        return cls(network, tokenizer, spec, device)

    @classmethod
    def from_pretrained(
        cls: type[M],
        folder: str | Path,
        device: str | torch.device | None = None,
        *,
        dtype: torch.dtype | str | None = None,
    ) -> M:
        """Load a folder written by :meth:`save_pretrained`; works offline, never runs remote code."""
        folder = Path(folder)
        spec = ModelSpec.load(folder)
        if spec.kind != cls.kind:
            raise ValueError(f"{folder} holds a {spec.kind!r} model, not a {cls.kind!r} model")
        if spec.backbone_model_type not in CONFIG_MAPPING:
            raise ValueError(
                f"{folder}: backbone type {spec.backbone_model_type!r} is unknown to this transformers version"
            )
        config = CONFIG_MAPPING[spec.backbone_model_type].from_dict(spec.backbone_config)
        backbone = AutoModel.from_config(config, trust_remote_code=False)
        network = TokenClassifierNetwork(
            backbone, tag_head=spec.has_tag_head, pooling=spec.pooling, dropout=spec.dropout
        )
        weights = folder / WEIGHTS_FILE
        if not weights.is_file():
            raise FileNotFoundError(f"{weights} not found")
        missing, unexpected = load_model(network, str(weights), strict=False)
        if missing or unexpected:
            raise ValueError(
                f"{weights} does not match the network rebuilt from {folder}: "
                f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}"
            )
        if dtype is not None:
            network.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        tokenizer = load_tokenizer(str(folder), local_files_only=True)
        return cls(network, tokenizer, spec, device)

    def save_pretrained(
        self, folder: str | Path, *, state_dict: dict[str, torch.Tensor] | None = None
    ) -> Path:
        """Write weights (safetensors), spec and tokenizer; atomically replaces an existing folder.

        ``state_dict`` lets a distributed trainer pass weights it gathered from all processes.
        """
        folder = Path(folder)
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if state_dict is None:
            save_model(self.network, str(tmp / WEIGHTS_FILE))
        else:
            _save_state_dict(state_dict, tmp / WEIGHTS_FILE)
        self.spec.save(tmp)
        self.tokenizer.save_pretrained(str(tmp))
        old = folder.with_name(folder.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
        return folder

    # -- device ------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.network.parameters()).device

    def to(self, device: str | torch.device | None) -> WordClassifier:
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.network.to(device)
        return self

    # -- inference ---------------------------------------------------------------------------

    def collator(self, *, pad_to: int | None = None, compat_labels: bool = False) -> Collator:
        pad = self.tokenizer.pad_token_id
        if pad is None:
            raise ValueError(f"tokenizer of {self.spec.backbone_name!r} has no pad token")
        return Collator(pad, pad_to=pad_to, compat_labels=compat_labels)

    def _run(
        self,
        encoded: Sequence[EncodedInput],
        *,
        batch_size: int,
        word_aggregation: str | None,
        show_progress: bool,
    ) -> Iterator[tuple[int, list[float], float | None]]:
        """Yield ``(input index, word probabilities, continue probability)`` in input order.

        Inputs are batched longest first so each batch carries little padding.
        """
        how = word_aggregation or self.spec.word_aggregation
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
        collate = self.collator()
        results: dict[int, tuple[list[float], float | None]] = {}
        was_training = self.network.training
        self.network.eval()
        device = self.device
        try:
            bar = tqdm(total=len(order), desc=f"{self.kind} predict", disable=not show_progress, unit="input")
            with torch.inference_mode():
                for start in range(0, len(order), batch_size):
                    ids = order[start : start + batch_size]
                    batch = collate([(i, encoded[i]) for i in ids])
                    inputs = {k: batch[k].to(device) for k in MODEL_INPUTS if k in batch}
                    out = self.network(**inputs)
                    probs = out["token_logits"].float().softmax(-1)[..., 1]
                    n_slots = int(batch["n_words"].max())
                    words = word_scores(probs, batch["word_ids"].to(device), n_slots, how).cpu()
                    tags = out["tag_logits"].float().softmax(-1)[:, 0].cpu() if "tag_logits" in out else None
                    for row, i in enumerate(ids):
                        n = encoded[i].n_words
                        results[i] = (words[row, :n].tolist(), float(tags[row]) if tags is not None else None)
                    bar.update(len(ids))
            bar.close()
        finally:
            self.network.train(was_training)
        for i in range(len(encoded)):
            yield i, results[i][0], results[i][1]

    def _max_length(self, max_length: int | None) -> int:
        return int(max_length or self.spec.max_length)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(backbone={self.spec.backbone_name!r}, pooling={self.spec.pooling!r}, "
            f"max_length={self.spec.max_length}, device={self.device})"
        )


def _check_max_length(config: Any, max_length: int) -> None:
    """Absolute-position encoders cannot see past their position table; relative ones can."""
    limit = getattr(config, "max_position_embeddings", None)
    relative = getattr(config, "position_biased_input", True) is False
    if limit and not relative and max_length > limit:
        raise ValueError(f"max_length {max_length} exceeds the backbone's max_position_embeddings ({limit})")


def _save_state_dict(state_dict: dict[str, torch.Tensor], path: Path) -> None:
    from safetensors.torch import save_file

    seen: dict[int, str] = {}
    tensors: dict[str, torch.Tensor] = {}
    for key, value in state_dict.items():
        ptr = value.data_ptr()
        if ptr in seen and value.numel():
            continue  # tied weights are stored once, as save_model does
        seen[ptr] = key
        tensors[key] = value.detach().to("cpu").contiguous()
    save_file(tensors, str(path), metadata={"format": "pt"})
