"""Words in, sub-word ids out, and back: the word<->sub-word alignment both models rest on.

Labels are per word (spaCy words, see ``efficientrag.text.words``), so every tokenizer is called
with ``is_split_into_words=True`` and read back through ``word_ids()``.

* :func:`load_tokenizer` makes a fast tokenizer encode words as they would be inside a sentence;
* :func:`encode_words` encodes target words (the chunk of a ``query, chunk`` pair, or the whole
  ``Query: … Info: …`` list) with every position knowing its target word, truncating at word
  boundaries;
* :class:`Collator` pads encoded inputs into tensors and derives sub-word labels from word labels;
* :func:`word_scores` turns sub-word probabilities back into one probability per word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.configuration import WORD_AGGREGATIONS
from efficientrag.models.inputs import IGNORE_INDEX, SEG_OTHER, SEG_QUERY, SEG_TARGET

NO_WORD = -1


@dataclass
class EncodedInput:
    """One tokenized input. ``word_ids[p]`` is the target word at position ``p`` or -1."""

    input_ids: np.ndarray
    word_ids: np.ndarray
    token_type_ids: np.ndarray | None
    n_words: int
    truncated_words: int = 0
    query_truncated_words: int = 0
    word_labels: np.ndarray | None = None
    tag: int = -1
    segment_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def encode_words(
    tokenizer: PreTrainedTokenizerBase,
    targets: Sequence[Sequence[str]],
    max_length: int,
    *,
    queries: Sequence[Sequence[str]] | None = None,
) -> list[EncodedInput]:
    """Encode target word lists (optionally paired after a query) under ``max_length`` tokens.

    Truncation is done here, at word boundaries, instead of by the tokenizer: inputs that do not fit
    are re-encoded with whole trailing target words removed, so a word is never half encoded, the
    word->position map stays exact, and the number of cut words is known (the caller reports it; a
    cut word's probability is 0.0). The query of a pair is kept whole unless it alone leaves no room
    for the chunk; then it is cut to half the budget and that is reported too.
    """
    targets = [list(t) for t in targets]
    pair = queries is not None
    qs = [list(q) for q in queries] if queries is not None else None
    if qs is not None and len(qs) != len(targets):
        raise InvalidArgumentError(f"{len(qs)} queries for {len(targets)} target word lists")
    if not targets:
        return []
    encodings = _encode(tokenizer, qs, targets)
    out: list[EncodedInput | None] = [None] * len(targets)
    redo: dict[int, tuple[int, int]] = {}
    for i, enc in enumerate(encodings):
        if len(enc.ids) <= max_length:
            out[i] = _to_input(enc, pair, len(targets[i]))
            continue
        redo[i] = _fit_words(enc, pair, max_length, len(targets[i]), len(qs[i]) if qs is not None else 0)
    if redo:
        idx = list(redo)
        cut_t = [targets[i][: redo[i][1]] for i in idx]
        cut_q = [qs[i][: redo[i][0]] for i in idx] if qs is not None else None
        for j, enc in zip(idx, _encode(tokenizer, cut_q, cut_t), strict=True):
            keep_q, keep_t = redo[j]
            while len(enc.ids) > max_length and (keep_t > 0 or keep_q > 0):
                # Sub-word counts were not additive for this tokenizer: cut one more word and retry.
                if keep_t > 0:
                    keep_t -= 1
                else:
                    keep_q -= 1
                q = [qs[j][:keep_q]] if qs is not None else None
                enc = _encode(tokenizer, q, [targets[j][:keep_t]])[0]
            if len(enc.ids) > max_length:
                raise InvalidArgumentError(
                    f"max_length {max_length} is too small for this tokenizer's special tokens alone"
                )
            item = _to_input(enc, pair, len(targets[j]))
            item.truncated_words = len(targets[j]) - keep_t
            item.query_truncated_words = (len(qs[j]) - keep_q) if qs is not None else 0
            out[j] = item
    return [x for x in out if x is not None]


def _encode(tokenizer: PreTrainedTokenizerBase, queries, targets):
    if queries is None:
        enc = tokenizer(targets, is_split_into_words=True, truncation=False, verbose=False)
    else:
        enc = tokenizer(queries, targets, is_split_into_words=True, truncation=False, verbose=False)
    return enc.encodings


def _to_input(enc, pair: bool, n_words: int) -> EncodedInput:
    target_seq = 1 if pair else 0
    word_ids = np.fromiter(
        (
            w if (w is not None and s == target_seq) else NO_WORD
            for w, s in zip(enc.word_ids, enc.sequence_ids, strict=True)
        ),
        dtype=np.int32,
        count=len(enc.ids),
    )
    type_ids = np.asarray(enc.type_ids, dtype=np.int32) if enc.type_ids else None
    segments = np.fromiter(
        (
            SEG_OTHER if (w is None or s is None) else (SEG_TARGET if s == target_seq else SEG_QUERY)
            for w, s in zip(enc.word_ids, enc.sequence_ids, strict=True)
        ),
        dtype=np.int8,
        count=len(enc.ids),
    )
    return EncodedInput(
        input_ids=np.asarray(enc.ids, dtype=np.int32),
        word_ids=word_ids,
        token_type_ids=type_ids,
        n_words=n_words,
        segment_ids=segments,
    )


def _fit_words(enc, pair: bool, max_length: int, n_target: int, n_query: int) -> tuple[int, int]:
    """How many query and target words to keep so the encoding fits (from per-word sub-word counts)."""
    target_seq = 1 if pair else 0
    t_counts = np.zeros(n_target, dtype=np.int64)
    q_counts = np.zeros(n_query, dtype=np.int64)
    special = 0
    for w, s in zip(enc.word_ids, enc.sequence_ids, strict=True):
        if w is None or s is None:
            special += 1
        elif s == target_seq:
            t_counts[w] += 1
        else:
            q_counts[w] += 1
    budget = max_length - special
    if budget <= 0:
        raise InvalidArgumentError(f"max_length {max_length} leaves no room after {special} special tokens")
    keep_q = n_query
    q_len = int(q_counts.sum())
    if pair and q_len >= budget:
        keep_q = int(np.searchsorted(np.cumsum(q_counts), budget // 2, side="right"))
        q_len = int(q_counts[:keep_q].sum())
    keep_t = int(np.searchsorted(np.cumsum(t_counts), budget - q_len, side="right"))
    return keep_q, keep_t


def load_tokenizer(path: str, *, local_files_only: bool = False) -> PreTrainedTokenizerBase:
    """A fast tokenizer that encodes words as they would be inside a sentence.

    Two tokenizer families need care for ``is_split_into_words=True`` to mean the same thing as on
    running text:

    * byte-level BPE (RoBERTa, ModernBERT, GPT-2 style) only marks a word start ("Ġ") when the
      pre-tokenizer adds a prefix space; without it every word after the first is encoded as if
      glued to the previous one, which is not what the model saw in pre-training;
    * Metaspace / sentencepiece tokenizers (DeBERTa-v3) have the same switch as ``prepend_scheme``.

    :func:`prepare_word_tokenizer` turns both on in the backend. DeBERTa-v3 folders that ship only
    ``spm.model`` are converted to a fast tokenizer by transformers itself (``DebertaV2Tokenizer`` is
    tokenizers-backed in transformers 5).
    """
    tokenizer = AutoTokenizer.from_pretrained(
        path, trust_remote_code=False, local_files_only=local_files_only
    )
    return prepare_word_tokenizer(tokenizer, source=path)


def prepare_word_tokenizer(
    tokenizer: PreTrainedTokenizerBase, *, source: str = ""
) -> PreTrainedTokenizerBase:
    if not getattr(tokenizer, "is_fast", False):
        raise InvalidArgumentError(
            f"tokenizer {source or type(tokenizer).__name__} is not a fast (tokenizers-backed) tokenizer; "
            "word-level labels need word_ids(). Save the tokenizer with a tokenizer.json."
        )
    backend = tokenizer.backend_tokenizer
    if backend.pre_tokenizer is not None:
        _prefix_every_word(backend.pre_tokenizer)
    if hasattr(tokenizer, "add_prefix_space"):
        tokenizer.add_prefix_space = True
    return tokenizer


def _prefix_every_word(pre_tokenizer: Any) -> None:
    name = type(pre_tokenizer).__name__
    if name == "Sequence":
        i = 0
        while True:
            try:
                part = pre_tokenizer[i]
            except IndexError:
                return
            _prefix_every_word(part)
            i += 1
    elif name == "ByteLevel":
        pre_tokenizer.add_prefix_space = True
    elif name == "Metaspace":
        pre_tokenizer.prepend_scheme = "always"


class Collator:
    """Pads encoded inputs into tensors, and derives the sub-word labels from the word labels.

    Padding is dynamic (to the longest input of the batch) unless ``pad_to`` asks for the official
    fixed length. Sub-word labels are made here, from each input's word labels and word map, so word
    labels stay the single source of truth: every sub-word of a target word gets that word's label
    (as in the official code); every other position (query, special tokens, padding) gets -100 and
    is ignored by the loss, or 0 in ``compat_labels`` mode, where the official code counted them as
    negatives.
    """

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


def word_scores(
    probs: torch.Tensor, word_ids: torch.Tensor, n_slots: int, how: str = "first"
) -> torch.Tensor:
    """Sub-word probabilities back to one probability per word, for a whole batch at once.

    ``probs`` and ``word_ids`` are ``[batch, positions]``; returns ``[batch, n_slots]``. ``first``
    reads the word's first sub-word (the usual token-classification convention), ``mean`` averages
    all its sub-words, ``max`` takes the most confident one. Word slots with no position (words cut
    by truncation, or words a tokenizer encodes to nothing) get 0.0.
    """
    if how not in WORD_AGGREGATIONS:
        raise InvalidArgumentError(f"word aggregation must be one of {WORD_AGGREGATIONS}, got {how!r}")
    probs = probs.float()
    batch = probs.shape[0]
    n_slots = max(int(n_slots), 1)
    valid = (word_ids >= 0) & (word_ids < n_slots)
    index = torch.where(valid, word_ids, torch.zeros_like(word_ids))
    zeros = torch.zeros(batch, n_slots, dtype=probs.dtype, device=probs.device)
    if how == "max":
        return zeros.scatter_reduce(1, index, probs * valid, reduce="amax", include_self=True)
    if how == "first":
        previous = torch.nn.functional.pad(word_ids[:, :-1], (1, 0), value=-1)
        valid = valid & (word_ids != previous)
    weight = valid.to(probs.dtype)
    sums = zeros.scatter_add(1, index, probs * weight)
    counts = torch.zeros_like(zeros).scatter_add(1, index, weight)
    return sums / counts.clamp(min=1.0)
