"""Padding encoded inputs into tensors, and the sub-word labels derived from word labels.

Padding is dynamic (to the longest input of the batch) unless ``pad_to`` asks for the official
fixed length. Sub-word labels are made here, from each input's word labels and word map, so word
labels stay the single source of truth: every sub-word of a target word gets that word's label
(as in the official code); every other position (query, special tokens, padding) gets -100 and is
ignored by the loss, or 0 in ``compat`` mode, where the official code counted them as negatives.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from efficientrag.models.encoding import NO_WORD, EncodedInput

IGNORE_INDEX = -100


class Collator:
    def __init__(
        self,
        pad_token_id: int,
        *,
        pad_to: int | None = None,
        pad_to_multiple_of: int | None = None,
        compat_labels: bool = False,
    ) -> None:
        self.pad_token_id = int(pad_token_id)
        self.pad_to = pad_to
        self.pad_to_multiple_of = pad_to_multiple_of
        self.compat_labels = compat_labels

    def __call__(self, items: Sequence[tuple[int, EncodedInput]]) -> dict[str, torch.Tensor]:
        """``items`` are ``(dataset index, input)``; the index travels along for audit and metrics."""
        encoded = [e for _, e in items]
        n = len(encoded)
        width = max(len(e) for e in encoded)
        if self.pad_to is not None:
            width = max(width, self.pad_to)
        if self.pad_to_multiple_of:
            m = self.pad_to_multiple_of
            width = (width + m - 1) // m * m
        input_ids = np.full((n, width), self.pad_token_id, dtype=np.int64)
        attention = np.zeros((n, width), dtype=np.int64)
        word_ids = np.full((n, width), NO_WORD, dtype=np.int64)
        segments = np.zeros((n, width), dtype=np.int64)
        with_types = encoded[0].token_type_ids is not None
        type_ids = np.zeros((n, width), dtype=np.int64) if with_types else None
        for i, e in enumerate(encoded):
            k = len(e)
            input_ids[i, :k] = e.input_ids
            attention[i, :k] = 1
            word_ids[i, :k] = e.word_ids
            if e.segment_ids is not None:
                segments[i, :k] = e.segment_ids
            if type_ids is not None and e.token_type_ids is not None:
                type_ids[i, :k] = e.token_type_ids
        batch = {
            "input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy(attention),
            "word_ids": torch.from_numpy(word_ids),
            "segment_ids": torch.from_numpy(segments),
            "n_words": torch.tensor([e.n_words for e in encoded], dtype=torch.long),
            "index": torch.tensor([i for i, _ in items], dtype=torch.long),
        }
        if type_ids is not None:
            batch["token_type_ids"] = torch.from_numpy(type_ids)
        if all(e.word_labels is not None for e in encoded):
            batch.update(self._labels(encoded, word_ids))
        return batch

    def _labels(self, encoded: Sequence[EncodedInput], word_ids: np.ndarray) -> dict[str, torch.Tensor]:
        n, width = word_ids.shape
        max_words = max(1, max(e.n_words for e in encoded))
        word_labels = np.full((n, max_words), IGNORE_INDEX, dtype=np.int64)
        labels = np.full((n, width), 0 if self.compat_labels else IGNORE_INDEX, dtype=np.int64)
        for i, e in enumerate(encoded):
            assert e.word_labels is not None
            word_labels[i, : e.n_words] = e.word_labels
            on_word = word_ids[i] >= 0
            labels[i, on_word] = e.word_labels[word_ids[i, on_word]]
        out = {"labels": torch.from_numpy(labels), "word_labels": torch.from_numpy(word_labels)}
        if encoded[0].tag >= 0:
            out["tags"] = torch.tensor([e.tag for e in encoded], dtype=torch.long)
        return out
