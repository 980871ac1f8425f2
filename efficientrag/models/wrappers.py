"""The Labeler and the Filter: a network and its tokenizer, loaded once and called on whole batches.

A model object wraps a ``transformers`` network (:class:`~efficientrag.models.modeling.LabelerModel`
or ``FilterModel``, whose config records everything needed to rebuild it) and its tokenizer; the
pipeline never runs the network per item. :class:`WordClassifier` holds what both share (building,
saving and loading through :mod:`efficientrag.models.model_folder`, devices, the faster inference
paths of :mod:`efficientrag.models.export`, batched prediction); :class:`Labeler` and
:class:`Filter` say what their inputs and predictions are.

* The Labeler/Tagger reads the pair ``(query words, chunk words)``: the token head scores chunk
  words (useless/useful), the tag head scores the pair (Continue = class 0 / Terminate = class 1).
* The Filter reads ``Query: … Info: …`` (:func:`~efficientrag.models.inputs.filter_words`) and keeps
  the words that form the next-hop query (drop/keep per word).
"""

from __future__ import annotations

import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AutoModel, PreTrainedTokenizerBase

from efficientrag.hub import hub_offline, resolve_model_path
from efficientrag.models.card import CARD_FILE, MODEL_NAME_SLOT, TrainingRecord
from efficientrag.models.configuration import CONFIG_CLASSES, WordClassifierConfig
from efficientrag.models.export import (
    OnnxNetwork,
    is_bf16,
    is_quantized,
    onnx_network,
    quantize_network,
    resolve_quantize,
)
from efficientrag.models.inputs import TAGS, FilterRow, LabelerRow
from efficientrag.models.model_folder import load_network, locate_model_folder, write_model_folder
from efficientrag.models.modeling import MODEL_CLASSES, MODEL_INPUTS, TokenClassifierNetwork, align_parameters
from efficientrag.models.tokenization import Collator, EncodedInput, encode_words, load_tokenizer, word_scores

M = TypeVar("M", bound="WordClassifier")
P = TypeVar("P")  # what the model predicts for one input


@dataclass
class LabelerPrediction:
    """``word_probs`` has one entry per chunk word; words cut by truncation get 0.0.

    Attributes:
        continue_prob: Probability that the chunk answers the query's hop (tag Continue).
        word_probs: Per chunk word, the probability that it is useful (goes on to the Filter).
        truncated_words: Chunk words cut to fit the input length.
        query_truncated_words: Query words cut to fit the input length.
    """

    continue_prob: float
    word_probs: list[float]
    truncated_words: int = 0
    query_truncated_words: int = 0


@dataclass
class FilterPrediction:
    """``word_probs`` has one entry per input word; words cut by truncation get 0.0.

    Attributes:
        word_probs: Per input word, the probability that it is kept in the next-hop query.
        truncated_words: Input words cut to fit the input length.
    """

    word_probs: list[float]
    truncated_words: int = 0


class WordClassifier(ABC, Generic[P]):
    """Base of :class:`~efficientrag.models.Labeler` and :class:`~efficientrag.models.Filter`."""

    kind: ClassVar[str] = ""
    default_max_length: ClassVar[int] = 384
    default_batch_size: ClassVar[int] = 32

    def __init__(
        self,
        network: TokenClassifierNetwork,
        tokenizer: PreTrainedTokenizerBase,
        device: str | torch.device | None = None,
        *,
        source: Path | None = None,
    ) -> None:
        """Wrap a network and its tokenizer (most code builds one with :meth:`from_pretrained` or
        :meth:`from_backbone` instead).

        Args:
            network: The ``transformers`` network of this kind (``LabelerModel``/``FilterModel``).
            tokenizer: The backbone's tokenizer.
            device: Where to run (None: CUDA when available, else CPU).
            source: The folder the network was loaded from (saving without a new training record
                keeps that folder's card, config and metrics).

        Raises:
            ValueError: The network is of the other kind.
        """
        if network.config.kind != self.kind:
            raise ValueError(f"{type(self).__name__} cannot hold a {network.config.kind!r} network")
        self.network = network
        self.tokenizer = tokenizer
        self.source = source  # the folder it was loaded from, if any
        # An ONNX Runtime session that predicts in place of ``network`` (quantize("onnx"...)).
        self.onnx: OnnxNetwork | None = None
        self.to(device)

    @property
    def config(self) -> WordClassifierConfig:
        """The network's config (``LabelerConfig`` / ``FilterConfig``): everything that rebuilds it."""
        return self.network.config

    @property
    def spec(self) -> WordClassifierConfig:
        """The config under its name of the first save format (``ModelSpec``), for code written then."""
        return self.network.config

    @property
    def max_length(self) -> int:
        """Token budget the model was trained with (inputs are truncated to it by default)."""
        return int(self.network.config.max_length)

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
            raise ValueError(
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

    # -- device ------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        """The device the network's weights are on."""
        return next(self.network.parameters()).device

    def to(self: M, device: str | torch.device | None) -> M:
        """Move the model to a device (in place).

        Args:
            device: The device (None: CUDA when available, else CPU).

        Returns:
            The model itself, for chaining.

        Raises:
            ValueError: An int8 or ONNX Runtime model asked to leave the CPU.
        """
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if (is_quantized(self.network) or self.onnx is not None) and torch.device(device).type != "cpu":
            what = "an int8-quantized" if self.onnx is None else "an ONNX Runtime"
            raise ValueError(f"{what} {self.kind} runs on CPU only, not on {device}")
        self.network.to(device)
        return self

    def quantize(self: M, mode: str = "int8") -> M:
        """Switch to a faster CPU inference path (in place); ``mode="none"`` leaves the model as it is.

        ``"int8"`` quantizes the torch network's Linear layers and ``"bf16"`` casts it to bfloat16
        (:mod:`efficientrag.models.export`);
        ``"onnx"`` / ``"onnx-int8"`` predict through ONNX Runtime (fp32 / int8 weights), exported
        once into a cache and leaving the torch network float. ``"auto"`` is ``"bf16"`` where
        bfloat16 is fast on this model's device and ``"none"`` elsewhere (``resolve_quantize``).

        Args:
            mode: ``"none"``, ``"int8"``, ``"bf16"``, ``"onnx"``, ``"onnx-int8"`` or ``"auto"``.

        Returns:
            The model itself, for chaining.

        Raises:
            ValueError: The mode needs the CPU and the model is elsewhere, or the model already
                runs on a path the mode cannot be applied over (load it again).
        """
        mode = resolve_quantize(mode, self.device)
        if mode == "none":
            return self
        if mode == "bf16":
            if self.onnx is not None or is_quantized(self.network):
                raise ValueError(
                    f"this {self.kind} already runs as {self.backend}; bf16 casts the float torch "
                    "network: load the model again to use it"
                )
            quantize_network(self.network, mode)
            return self
        if self.device.type != "cpu":
            raise ValueError(
                f"quantize={mode!r} runs on CPU only; this {self.kind} is on {self.device} (set device=cpu)"
            )
        if mode == "int8":
            if self.onnx is not None:
                raise ValueError(
                    f"this {self.kind} already predicts through ONNX Runtime ({self.onnx.mode}); "
                    "int8 applies to the torch network: load the model again to use it"
                )
            quantize_network(self.network, mode)
            return self
        if is_quantized(self.network) or is_bf16(self.network):
            state = "int8-quantized" if is_quantized(self.network) else "cast to bfloat16"
            raise ValueError(
                f"this {self.kind}'s torch network is {state}; ONNX Runtime exports the float "
                "network: load the model again"
            )
        self.onnx = onnx_network(self.network, mode)
        return self

    @property
    def backend(self) -> str:
        """What predicts: ``"torch"``, ``"torch-int8"``, ``"torch-bf16"``, ``"onnx"`` or ``"onnx-int8"``."""
        if self.onnx is not None:
            return self.onnx.mode
        if is_quantized(self.network):
            return "torch-int8"
        return "torch-bf16" if is_bf16(self.network) else "torch"

    # -- inference ---------------------------------------------------------------------------

    def collator(self, *, pad_to: int | None = None, compat_labels: bool = False) -> Collator:
        """The function that pads this model's encoded inputs into batches (training and inference).

        Args:
            pad_to: Pad every batch to this length (the official fixed length); None pads to the
                longest input of the batch.
            compat_labels: Label non-target positions 0 instead of ignoring them, as the official
                code did.

        Returns:
            The collator.

        Raises:
            ValueError: The tokenizer has no pad token.
        """
        pad = self.tokenizer.pad_token_id
        if pad is None:
            raise ValueError(f"tokenizer of {self.config.encoder_name!r} has no pad token")
        return Collator(pad, pad_to=pad_to, compat_labels=compat_labels)

    def predict(
        self,
        inputs: Sequence[Any],
        *,
        batch_size: int | None = None,
        max_length: int | None = None,
        word_aggregation: str | None = None,
        show_progress: bool = False,
    ) -> list[P]:
        """One prediction per input, in input order (``batch_size`` defaults to the model's own).

        Inputs are batched longest first, so each batch carries little padding.

        Args:
            inputs: Labeler: ``(query words, chunk words)`` pairs; Filter: word lists
                (``Query: … Info: …``, see :func:`~efficientrag.models.inputs.filter_words`).
            batch_size: Inputs per forward pass (None: 32 Labeler / 64 Filter).
            max_length: Input length in tokens (None: the length the model was trained with);
                longer inputs are cut at word boundaries.
            word_aggregation: Override the config's sub-word -> word aggregation.
            show_progress: Show a progress bar.

        Returns:
            :class:`LabelerPrediction` or :class:`FilterPrediction` per input.
        """
        encoded = self.encode(inputs, max_length=max_length)
        runs = self._run(
            encoded,
            batch_size=batch_size or self.default_batch_size,
            word_aggregation=word_aggregation,
            show_progress=show_progress,
        )
        return [self._prediction(encoded[i], words, cont) for i, words, cont in runs]

    @abstractmethod
    def encode(self, inputs: Sequence[Any], *, max_length: int | None = None) -> list[EncodedInput]:
        """The model's inputs as tokenized inputs, truncated to ``max_length`` at word boundaries.

        Args:
            inputs: As for :meth:`predict`.
            max_length: Input length in tokens (None: the trained length).

        Returns:
            One encoded input per input.
        """

    @abstractmethod
    def _prediction(self, encoded: EncodedInput, word_probs: list[float], continue_prob: float | None) -> P:
        """One input's prediction from its encoding and the network's word (and tag) probabilities."""

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
        how = word_aggregation or self.config.word_aggregation
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
                    out = self.network(**inputs) if self.onnx is None else self.onnx(inputs)
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
        return int(max_length or self.max_length)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(backbone={self.config.encoder_name!r}, pooling={self.config.pooling!r}, "
            f"max_length={self.max_length}, device={self.device})"
        )


def _check_max_length(config: Any, max_length: int) -> None:
    """Absolute-position encoders cannot see past their position table; relative ones can."""
    limit = getattr(config, "max_position_embeddings", None)
    relative = getattr(config, "position_biased_input", True) is False
    if limit and not relative and max_length > limit:
        raise ValueError(f"max_length {max_length} exceeds the backbone's max_position_embeddings ({limit})")


class Labeler(WordClassifier[LabelerPrediction]):
    """The Labeler/Tagger: given a query and a retrieved chunk, says whether the chunk answers the
    query's hop (the tag: Continue / Terminate) and which of its words are useful for the next hop.

    Args:
        network: A ``LabelerModel``.
        tokenizer: The backbone's tokenizer.
        device: Where to run (None: CUDA when available, else CPU).
    """

    kind = "labeler"
    default_max_length = 384
    default_batch_size = 32

    def encode(
        self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], *, max_length: int | None = None
    ) -> list[EncodedInput]:
        """Tokenize ``(query words, chunk words)`` pairs; the chunk's words are the ones scored.

        Args:
            pairs: ``(query words, chunk words)`` per input.
            max_length: Input length in tokens (None: the trained length).

        Returns:
            One encoded input per pair.
        """
        queries = [list(q) for q, _ in pairs]
        chunks = [list(c) for _, c in pairs]
        return encode_words(self.tokenizer, chunks, self._max_length(max_length), queries=queries)

    def encode_rows(self, rows: Sequence[LabelerRow], *, max_length: int | None = None) -> list[EncodedInput]:
        """Training inputs: encoded pairs carrying word labels and the tag class.

        Args:
            rows: Labeler training rows.
            max_length: Input length in tokens (None: the trained length).

        Returns:
            One encoded input per row, with ``word_labels`` and ``tag`` set.
        """
        encoded = self.encode([(r.query_words, r.chunk_words) for r in rows], max_length=max_length)
        for row, enc in zip(rows, encoded, strict=True):
            enc.word_labels = np.asarray(row.labels, dtype=np.int64)
            enc.tag = TAGS.index(row.tag)
        return encoded

    def _prediction(
        self, encoded: EncodedInput, word_probs: list[float], continue_prob: float | None
    ) -> LabelerPrediction:
        assert continue_prob is not None
        return LabelerPrediction(
            continue_prob=continue_prob,
            word_probs=word_probs,
            truncated_words=encoded.truncated_words,
            query_truncated_words=encoded.query_truncated_words,
        )


class Filter(WordClassifier[FilterPrediction]):
    """The Filter: from the query plus the words the Labeler kept, keeps the words that form the
    next-hop query.

    Args:
        network: A ``FilterModel``.
        tokenizer: The backbone's tokenizer.
        device: Where to run (None: CUDA when available, else CPU).
    """

    kind = "filter"
    default_max_length = 256
    default_batch_size = 64

    def encode(
        self, word_lists: Sequence[Sequence[str]], *, max_length: int | None = None
    ) -> list[EncodedInput]:
        """Tokenize word lists; every word is scored.

        Args:
            word_lists: The Filter's input words per input.
            max_length: Input length in tokens (None: the trained length).

        Returns:
            One encoded input per word list.
        """
        return encode_words(self.tokenizer, [list(w) for w in word_lists], self._max_length(max_length))

    def encode_rows(self, rows: Sequence[FilterRow], *, max_length: int | None = None) -> list[EncodedInput]:
        """Training inputs: encoded word lists carrying their word labels.

        Args:
            rows: Filter training rows.
            max_length: Input length in tokens (None: the trained length).

        Returns:
            One encoded input per row, with ``word_labels`` set.
        """
        encoded = self.encode([r.words for r in rows], max_length=max_length)
        for row, enc in zip(rows, encoded, strict=True):
            enc.word_labels = np.asarray(row.labels, dtype=np.int64)
        return encoded

    def _prediction(
        self, encoded: EncodedInput, word_probs: list[float], continue_prob: float | None
    ) -> FilterPrediction:
        return FilterPrediction(word_probs=word_probs, truncated_words=encoded.truncated_words)


# The wrapper of each model kind, for code that is handed the kind (the training loop).
WRAPPER_CLASSES: dict[str, type[WordClassifier]] = {cls.kind: cls for cls in (Labeler, Filter)}
