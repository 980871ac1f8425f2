"""How a Labeler/Filter is built, loaded, saved and shared: its saved form, apart from running it.

:class:`PretrainedMixin` gives :class:`~efficientrag.models.word_classifier.WordClassifier` the
``transformers``-style constructors (:meth:`~PretrainedMixin.from_backbone`,
:meth:`~PretrainedMixin.from_pretrained`) and writers (:meth:`~PretrainedMixin.save_pretrained`,
:meth:`~PretrainedMixin.push_to_hub`), all through :mod:`efficientrag.models.model_folder`. It lives
apart from the base so that what runs a model (devices, inference paths, batched prediction) reads
on its own; it is no class to use by itself: it expects the base's ``kind``, ``network``,
``tokenizer``, ``source`` and ``backend``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, TypeVar

import torch
from transformers import AutoModel

from efficientrag.errors import InvalidArgumentError
from efficientrag.hub import hub_offline, resolve_model_path
from efficientrag.models.card import CARD_FILE, MODEL_NAME_SLOT, TrainingRecord
from efficientrag.models.configuration import CONFIG_CLASSES
from efficientrag.models.export import is_bf16, is_quantized
from efficientrag.models.model_folder import load_network, locate_model_folder, write_model_folder
from efficientrag.models.modeling import MODEL_CLASSES, align_parameters
from efficientrag.models.tokenization import load_tokenizer

M = TypeVar("M", bound="PretrainedMixin")


class PretrainedMixin:
    """Construction from a backbone or a saved folder, and saving and sharing, for a word classifier."""

    # Set by WordClassifier and its kinds.
    kind: str
    default_max_length: int

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
        """A fresh model on a pre-trained encoder (heads randomly initialized), ready to train.

        Args:
            name_or_path: The encoder: a local folder, a Hub name, or the MiniLM alias of the
                packaged offline weights.
            pooling: How the Labeler's tag head pools the sequence: ``"mean"``, ``"first"`` or ``"pair"``.
            max_length: Input length in tokens (None: the kind's default, 384 Labeler / 256 Filter).
            word_aggregation: How sub-word probabilities become one per word: ``"first"``,
                ``"mean"`` or ``"max"``.
            dropout: Dropout before the heads.
            device: Where to run (None: CUDA when available, else CPU).

        Returns:
            The untrained model.

        Raises:
            ValueError: ``max_length`` exceeds an absolute-position encoder's position table, or a
                setting is not one of its choices.
        """
        path = resolve_model_path(name_or_path)
        local = hub_offline()
        backbone = AutoModel.from_pretrained(
            path, dtype=torch.float32, trust_remote_code=False, local_files_only=local
        )
        align_parameters(backbone)
        tokenizer = load_tokenizer(path, local_files_only=local)
        config = CONFIG_CLASSES[cls.kind](
            encoder_config=backbone.config,
            encoder_name=name_or_path,
            pooling=pooling,
            max_length=max_length or cls.default_max_length,
            word_aggregation=word_aggregation,
            dropout=dropout,
            # The encoder's config object becomes ours (nested); keep its attention implementation,
            # which building our config would otherwise reset for every nested config.
            attn_implementation=backbone.config._attn_implementation,
        )
        _check_max_length(backbone.config, config.max_length)
        network = MODEL_CLASSES[cls.kind](config, backbone=backbone)
        return cls(network, tokenizer, device)

    @classmethod
    def from_pretrained(
        cls: type[M],
        name_or_path: str | Path,
        device: str | torch.device | None = None,
        *,
        dtype: torch.dtype | str | None = None,
        revision: str | None = None,
    ) -> M:
        """Load a saved folder, or a Hub repository (``user/repo``) where the Hub is reachable or cached.

        Never runs remote code; weights are read from safetensors only.

        Args:
            name_or_path: A folder written by :meth:`save_pretrained` (or training), or a Hub repository.
            device: Where to run (None: CUDA when available, else CPU).
            dtype: Cast the weights to this dtype (a ``torch.dtype`` or its name, e.g. ``"bfloat16"``).
            revision: The Hub revision (branch, tag or commit) to fetch.

        Returns:
            The loaded model; ``source`` is the folder it came from.

        Raises:
            FileNotFoundError: No such folder, and the name is not a Hub repository.
        """
        folder = locate_model_folder(name_or_path, revision=revision)
        network = load_network(folder, cls.kind)
        if dtype is not None:
            network.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        tokenizer = load_tokenizer(str(folder), local_files_only=True)
        return cls(network, tokenizer, device, source=folder)

    def save_pretrained(
        self,
        folder: str | Path,
        *,
        state_dict: dict[str, torch.Tensor] | None = None,
        training: TrainingRecord | None = None,
    ) -> Path:
        """Write config, weights (safetensors), tokenizer and model card; atomically replaces ``folder``.

        ``state_dict`` lets a distributed trainer pass weights it gathered from all processes;
        ``training`` is what the training loop knows about the run, for the model card. Without it,
        a model loaded from a trained folder keeps that folder's card, config and metrics.
        A model running through ONNX Runtime saves its float torch weights, which the
        conversion left untouched.

        Args:
            folder: The folder to write.
            state_dict: Weights to save in place of the network's own.
            training: The training run's record, for the model card.

        Returns:
            The written folder.

        Raises:
            ValueError: The model was quantized to int8 or cast to bf16 (save the float model).
        """
        if is_quantized(self.network) or is_bf16(self.network):
            raise InvalidArgumentError(
                f"this {self.kind} was quantized for inference ({self.backend}) and cannot be saved; save "
                "the float model and quantize it again after loading"
            )
        carry = self.source if training is None and self.source is not None else None
        return write_model_folder(
            folder, self.network, self.tokenizer, state_dict=state_dict, training=training, carry_from=carry
        )

    def push_to_hub(
        self,
        repo_id: str,
        *,
        private: bool | None = None,
        token: str | None = None,
        revision: str | None = None,
    ) -> str:
        """Upload the folder :meth:`save_pretrained` writes (network, tokenizer, card) to a Hub repository.

        ``self.network.push_to_hub`` (inherited from ``transformers``) would upload config and
        weights only; a shared Labeler/Filter also needs its word-level tokenizer and card.

        Args:
            repo_id: The Hub repository (``user/name``); created when missing.
            private: Create the repository private (None: the Hub's default).
            token: A Hub token (None: the logged-in one).
            revision: The branch to upload to (None: the default branch).

        Returns:
            The commit URL.
        """
        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            folder = self.save_pretrained(Path(tmp) / "model")
            card = folder / CARD_FILE
            card.write_text(
                card.read_text(encoding="utf-8").replace(MODEL_NAME_SLOT, repo_id), encoding="utf-8"
            )
            info = api.upload_folder(
                repo_id=repo_id,
                folder_path=str(folder),
                revision=revision,
                commit_message=f"Upload efficientrag {self.kind}",
            )
        return str(info)


def _check_max_length(config: Any, max_length: int) -> None:
    """Absolute-position encoders cannot see past their position table; relative ones can."""
    limit = getattr(config, "max_position_embeddings", None)
    relative = getattr(config, "position_biased_input", True) is False
    if limit and not relative and max_length > limit:
        raise InvalidArgumentError(
            f"max_length {max_length} exceeds the backbone's max_position_embeddings ({limit})"
        )
