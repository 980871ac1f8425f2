"""The Filter: which words of ``Query: … Info: …`` form the next-hop query (keep/drop per word)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from efficientrag.models.base import WordClassifier
from efficientrag.models.encoding import EncodedInput, encode_words
from efficientrag.models.inputs import FilterRow


@dataclass
class FilterPrediction:
    """``word_probs`` has one entry per input word; words cut by truncation get 0.0."""

    word_probs: list[float]
    truncated_words: int = 0


class Filter(WordClassifier):
    kind = "filter"
    default_max_length = 256

    def encode(
        self, word_lists: Sequence[Sequence[str]], *, max_length: int | None = None
    ) -> list[EncodedInput]:
        return encode_words(self.tokenizer, [list(w) for w in word_lists], self._max_length(max_length))

    def encode_rows(self, rows: Sequence[FilterRow], *, max_length: int | None = None) -> list[EncodedInput]:
        encoded = self.encode([r.words for r in rows], max_length=max_length)
        for row, enc in zip(rows, encoded, strict=True):
            enc.word_labels = np.asarray(row.labels, dtype=np.int64)
        return encoded

    def predict(
        self,
        word_lists: Sequence[Sequence[str]],
        *,
        batch_size: int = 64,
        max_length: int | None = None,
        word_aggregation: str | None = None,
        show_progress: bool = False,
    ) -> list[FilterPrediction]:
        encoded = self.encode(word_lists, max_length=max_length)
        return [
            FilterPrediction(word_probs=words, truncated_words=encoded[i].truncated_words)
            for i, words, _ in self._run(
                encoded, batch_size=batch_size, word_aggregation=word_aggregation, show_progress=show_progress
            )
        ]
