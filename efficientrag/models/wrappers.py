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


class Labeler(WordClassifier[LabelerPrediction]):
    """The Labeler/Tagger: given a query and a retrieved chunk, says whether the chunk answers the
    query's hop (the tag: Continue / Terminate) and which of its words are useful for the next hop.
    Built on a ``LabelerModel`` network (the constructor is :class:`WordClassifier`'s).
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
