"""The Labeler and the Filter: what each model kind reads and what it predicts.

Both are :class:`~efficientrag.models.word_classifier.WordClassifier` models: a ``transformers``
network (:class:`~efficientrag.models.modeling.LabelerModel` or ``FilterModel``, whose config
records everything needed to rebuild it) and its tokenizer, loaded once and called on whole batches.
The base (and :mod:`efficientrag.models.pretrained`, which builds, saves and loads it) is shared;
this module says what their inputs and predictions are.

* The Labeler/Tagger reads the pair ``(query words, chunk words)``: the token head scores chunk
  words (useless/useful), the tag head scores the pair (Continue = class 0 / Terminate = class 1).
* The Filter reads ``Query: … Info: …`` (:func:`~efficientrag.models.inputs.filter_words`) and keeps
  the words that form the next-hop query (drop/keep per word).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.early_exit import EarlyExit, check_split, load_early_exit, run_with_exit
from efficientrag.models.export import is_quantized
from efficientrag.models.inputs import TAGS, FilterRow, LabelerRow
from efficientrag.models.tokenization import EncodedInput, encode_words
from efficientrag.models.word_classifier import WordClassifier

__all__ = ["WRAPPER_CLASSES", "Filter", "FilterPrediction", "Labeler", "LabelerPrediction"]


@dataclass
class LabelerPrediction:
    """``word_probs`` has one entry per chunk word; words cut by truncation get 0.0.

    Attributes:
        continue_prob: Probability that the chunk answers the query's hop (tag Continue).
        word_probs: Per chunk word, the probability that it is useful (goes on to the Filter).
        truncated_words: Chunk words cut to fit the input length.
        query_truncated_words: Query words cut to fit the input length.
        exited_at: The encoder layer the pair left at (early exit): ``continue_prob`` is then the
            exit head's estimate and ``word_probs`` are all 0.0; None for a pair judged in full.
    """

    continue_prob: float
    word_probs: list[float]
    truncated_words: int = 0
    query_truncated_words: int = 0
    exited_at: int | None = None


@dataclass
class FilterPrediction:
    """``word_probs`` has one entry per input word; words cut by truncation get 0.0.

    Attributes:
        word_probs: Per input word, the probability that it is kept in the next-hop query.
        truncated_words: Input words cut to fit the input length.
    """

    word_probs: list[float]
    truncated_words: int = 0


class Labeler(WordClassifier[LabelerPrediction]):
    """The Labeler/Tagger: given a query and a retrieved chunk, says whether the chunk answers the
    query's hop (the tag: Continue / Terminate) and which of its words are useful for the next hop.
    Built on a ``LabelerModel`` network (the constructor is :class:`WordClassifier`'s).
    """

    kind = "labeler"
    default_max_length = 384
    default_batch_size = 32
    # Its exit head, once attached or read from ``source/early_exit`` (models/early_exit.py).
    _early_exit: EarlyExit | None = None

    def predict(
        self,
        inputs: Sequence[tuple[Sequence[str], Sequence[str]]],
        *,
        batch_size: int | None = None,
        max_length: int | None = None,
        word_aggregation: str | None = None,
        show_progress: bool = False,
        exit_below: float | None = None,
    ) -> list[LabelerPrediction]:
        """One prediction per pair, in input order; with ``exit_below``, pairs leave early.

        Args:
            inputs: ``(query words, chunk words)`` pairs.
            batch_size: Pairs per forward pass (None: 32).
            max_length: Input length in tokens (None: the trained length).
            word_aggregation: Override the config's sub-word -> word aggregation.
            show_progress: Show a progress bar (full-depth prediction only).
            exit_below: A pair whose upper estimate of its Continue probability (by the exit head
                of its layer) is below this leaves at the first exit layer where it is
                (``exited_at``), unlabelled; None runs every pair in full.

        Returns:
            A :class:`LabelerPrediction` per pair.

        Raises:
            InvalidArgumentError: ``exit_below`` outside [0, 1], no exit heads, or the Labeler
                runs as int8 or through ONNX Runtime (the early exit runs the float32 or bf16 network).
        """
        if exit_below is None:
            return super().predict(
                inputs,
                batch_size=batch_size,
                max_length=max_length,
                word_aggregation=word_aggregation,
                show_progress=show_progress,
            )
        if not 0.0 <= float(exit_below) <= 1.0:
            raise InvalidArgumentError(f"exit_below must be in [0, 1], got {exit_below}")
        if self.onnx is not None or is_quantized(self.network):
            # int8 quantizes each batch's activations with that batch's own range, so a re-batched
            # stage would not compute what the whole network computes.
            runs_as = self.onnx.mode if self.onnx is not None else "int8"
            raise InvalidArgumentError(
                f"the early exit runs the float32 or bf16 torch network; this labeler runs as {runs_as} "
                "(load it again with quantize none or bf16)"
            )
        head = self.early_exit()
        encoded = self.encode(inputs, max_length=max_length)
        runs = run_with_exit(
            self,
            head,
            encoded,
            exit_below=float(exit_below),
            batch_size=batch_size or self.default_batch_size,
            word_aggregation=word_aggregation or self.config.word_aggregation,
        )
        return [
            LabelerPrediction(
                continue_prob=cont,
                word_probs=words,
                truncated_words=encoded[i].truncated_words,
                query_truncated_words=encoded[i].query_truncated_words,
                exited_at=layer,
            )
            for i, words, cont, layer in runs
        ]

    def early_exit(self) -> EarlyExit:
        """The exit heads: those attached, or those saved in the folder the Labeler was loaded from.

        Returns:
            The heads, on the Labeler's device.

        Raises:
            InvalidArgumentError: None attached and none saved beside the Labeler (or fit to another).
        """
        if self._early_exit is None:
            if self.source is None:
                raise InvalidArgumentError(
                    "this labeler has no early-exit heads: attach_early_exit() heads fit to it, or load the "
                    "labeler from a folder that holds them (efficientrag train exit-head)"
                )
            self.attach_early_exit(load_early_exit(self.source, self.device))
        assert self._early_exit is not None
        return self._early_exit.to(self.device)  # follows the Labeler after a .to()

    def attach_early_exit(self, early_exit: EarlyExit) -> None:
        """Use ``early_exit`` for ``predict(..., exit_below=...)``, once its layers are checked to
        split this Labeler's encoder exactly.

        Args:
            early_exit: Heads fit to this Labeler (:func:`efficientrag.training.exit_head.fit_exit_head`).

        Raises:
            InvalidArgumentError: Their pooling is not the Labeler's, or the encoder cannot be split there.
        """
        if early_exit.pooling != self.config.pooling:
            raise InvalidArgumentError(
                f"the exit head pools {early_exit.pooling!r}, this labeler {self.config.pooling!r}"
            )
        check_split(self.network, early_exit.layers)
        self._early_exit = early_exit.to(self.device)

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
    next-hop query. Built on a ``FilterModel`` network (the constructor is :class:`WordClassifier`'s).
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
