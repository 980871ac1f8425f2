"""Words in, sub-word ids out, with every position knowing which target word it belongs to.

The target words are the chunk (Labeler: the second sequence of the ``query, chunk`` pair) or the
whole ``Query: … Info: …`` list (Filter). Truncation is done here, at word boundaries, instead of by
the tokenizer: inputs that do not fit are re-encoded with whole trailing target words removed, so a
word is never half encoded, the word→position map stays exact, and the number of cut words is known
(the caller reports it; a cut word's probability is 0.0). The query of a pair is kept whole unless
it alone leaves no room for the chunk; then it is cut to half the budget and that is reported too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from transformers import PreTrainedTokenizerBase

NO_WORD = -1
# Segment of each position: special tokens and padding, query words, target words. The "pair"
# tag-head pooling reads the query and the chunk separately through it.
SEG_OTHER, SEG_QUERY, SEG_TARGET = 0, 1, 2


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
    """Encode target word lists (optionally paired after a query) under ``max_length`` tokens."""
    targets = [list(t) for t in targets]
    pair = queries is not None
    qs = [list(q) for q in queries] if queries is not None else None
    if qs is not None and len(qs) != len(targets):
        raise ValueError(f"{len(qs)} queries for {len(targets)} target word lists")
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
                raise ValueError(
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
        raise ValueError(f"max_length {max_length} leaves no room after {special} special tokens")
    keep_q = n_query
    q_len = int(q_counts.sum())
    if pair and q_len >= budget:
        keep_q = int(np.searchsorted(np.cumsum(q_counts), budget // 2, side="right"))
        q_len = int(q_counts[:keep_q].sum())
    keep_t = int(np.searchsorted(np.cumsum(t_counts), budget - q_len, side="right"))
    return keep_q, keep_t
