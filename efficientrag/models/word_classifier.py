"""The base of the Labeler and the Filter: a network and its tokenizer, run on whole batches.

:class:`WordClassifier` holds what both kinds share once they are loaded: the device, the faster
inference paths of :mod:`efficientrag.models.export` (int8, bf16, ONNX Runtime) and batched
prediction, longest inputs first. Building, loading, saving and sharing come from
:class:`~efficientrag.models.pretrained.PretrainedMixin`; what the inputs and predictions of each
kind are, from :class:`~efficientrag.models.wrappers.Labeler` and
:class:`~efficientrag.models.wrappers.Filter`. The pipeline never runs the network per item.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.configuration import WordClassifierConfig
from efficientrag.models.export import (
    OnnxNetwork,
    is_bf16,
    is_quantized,
    onnx_network,
    quantize_network,
    resolve_quantize,
)
from efficientrag.models.modeling import MODEL_INPUTS, TokenClassifierNetwork
from efficientrag.models.pretrained import PretrainedMixin
from efficientrag.models.tokenization import Collator, EncodedInput, word_scores

M = TypeVar("M", bound="WordClassifier")
P = TypeVar("P")  # what the model predicts for one input


class WordClassifier(PretrainedMixin, ABC, Generic[P]):
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
            raise InvalidArgumentError(f"{type(self).__name__} cannot hold a {network.config.kind!r} network")
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
    def max_length(self) -> int:
        """Token budget the model was trained with (inputs are truncated to it by default)."""
        return int(self.network.config.max_length)

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
            raise InvalidArgumentError(f"{what} {self.kind} runs on CPU only, not on {device}")
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
                raise InvalidArgumentError(
                    f"this {self.kind} already runs as {self.backend}; bf16 casts the float torch "
                    "network: load the model again to use it"
                )
            quantize_network(self.network, mode)
            return self
        if self.device.type != "cpu":
            raise InvalidArgumentError(
                f"quantize={mode!r} runs on CPU only; this {self.kind} is on {self.device} (set device=cpu)"
            )
        if mode == "int8":
            if self.onnx is not None:
                raise InvalidArgumentError(
                    f"this {self.kind} already predicts through ONNX Runtime ({self.onnx.mode}); "
                    "int8 applies to the torch network: load the model again to use it"
                )
            quantize_network(self.network, mode)
            return self
        if is_quantized(self.network) or is_bf16(self.network):
            state = "int8-quantized" if is_quantized(self.network) else "cast to bfloat16"
            raise InvalidArgumentError(
                f"this {self.kind}'s torch network is {state}; ONNX Runtime exports the float "
                "network: load the model again"
            )
        self.onnx = onnx_network(self.network, mode)
        return self

    @property
    def quantize_mode(self) -> str:
        """The ``quantize`` mode this model runs as: ``"none"``, ``"int8"``, ``"bf16"``, ``"onnx"``
        or ``"onnx-int8"`` (what a run over it records, whatever its config asked for)."""
        if self.onnx is not None:
            return self.onnx.mode
        if is_quantized(self.network):
            return "int8"
        return "bf16" if is_bf16(self.network) else "none"

    @property
    def backend(self) -> str:
        """What predicts: ``"torch"``, ``"torch-int8"``, ``"torch-bf16"``, ``"onnx"`` or ``"onnx-int8"``."""
        mode = self.quantize_mode
        if mode.startswith("onnx"):
            return mode
        return "torch" if mode == "none" else f"torch-{mode}"

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
            raise InvalidArgumentError(f"tokenizer of {self.config.encoder_name!r} has no pad token")
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
