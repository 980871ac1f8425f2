"""The Labeler/Tagger: which chunk words answer the query, and whether to follow the chunk.

Input is the pair ``(query words, chunk words)``; the token head scores chunk words
(useful/useless), the tag head scores the pair (Continue = class 0 / Terminate = class 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from efficientrag.models.base import WordClassifier
from efficientrag.models.encoding import EncodedInput, encode_words
from efficientrag.models.inputs import TAGS, LabelerRow


@dataclass
class LabelerPrediction:
    """``word_probs`` has one entry per chunk word; words cut by truncation get 0.0."""

    continue_prob: float
    word_probs: list[float]
    truncated_words: int = 0
    query_truncated_words: int = 0


class Labeler(WordClassifier):
    kind = "labeler"
    default_max_length = 384

    def encode(
        self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], *, max_length: int | None = None
    ) -> list[EncodedInput]:
        queries = [list(q) for q, _ in pairs]
        chunks = [list(c) for _, c in pairs]
        return encode_words(self.tokenizer, chunks, self._max_length(max_length), queries=queries)

    def encode_rows(self, rows: Sequence[LabelerRow], *, max_length: int | None = None) -> list[EncodedInput]:
        """Training inputs: encoded pairs carrying word labels and the tag class."""
        encoded = self.encode([(r.query_words, r.chunk_words) for r in rows], max_length=max_length)
        for row, enc in zip(rows, encoded, strict=True):
            enc.word_labels = np.asarray(row.labels, dtype=np.int64)
            enc.tag = TAGS.index(row.tag)
        return encoded

    def predict(
        self,
        pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        word_aggregation: str | None = None,
        show_progress: bool = False,
    ) -> list[LabelerPrediction]:
        encoded = self.encode(pairs, max_length=max_length)
        out: list[LabelerPrediction] = []
        for i, words, cont in self._run(
            encoded, batch_size=batch_size, word_aggregation=word_aggregation, show_progress=show_progress
        ):
            assert cont is not None
            out.append(
                LabelerPrediction(
                    continue_prob=cont,
                    word_probs=words,
                    truncated_words=encoded[i].truncated_words,
                    query_truncated_words=encoded[i].query_truncated_words,
                )
            )
        return out
