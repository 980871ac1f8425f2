"""DRAGIN's QFS (Query Formulation based on Self-attention): what to retrieve.

Paper (section 3.2): take the last-layer attention of the triggering token t_i over the earlier
tokens of the context (the question and the output so far), keep the ``top_n`` tokens with the
largest attention, map them back to their words and put those words in text order.

Official code (``keep_real_words``): the context is ``question + text so far + the triggering
sentence``, recomputed in one forward pass. For each word w, the attention rows of the positions
that predicted w's tokens (row k-1 for token k), restricted to the keys before w and normalised,
are averaged over w's tokens and summed per word; the rows of the sentence's hit words (above
theta, content words) are averaged; the ``top_n`` content words that are not hit words are kept,
in text order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from efficientrag.errors import InvalidArgumentError

_EDGE_PUNCT = re.compile(r"^[^\w]+|[^\w]+$")


def qfs_paper(row: np.ndarray, candidates: Sequence[int], top_n: int) -> list[int]:
    """The ``top_n`` candidate positions with the largest attention in ``row`` (ties: the earlier
    one), returned in text order."""
    ranked = sorted(candidates, key=lambda j: (-float(row[j]), j))[:top_n]
    return sorted(ranked)


def words_at(text: str, token_spans: Sequence[tuple[int, int]], positions: Sequence[int]) -> list[str]:
    """The whitespace words that contain the given tokens (one entry per word, in text order),
    without surrounding punctuation."""
    starts: dict[int, str] = {}
    for p in positions:
        a, b = token_spans[p]
        chunk = text[a:b]
        lead = len(chunk) - len(chunk.lstrip())
        c = a + lead
        if c >= b:
            continue
        left = c
        while left > 0 and not text[left - 1].isspace():
            left -= 1
        right = c
        while right < len(text) and not text[right].isspace():
            right += 1
        word = _EDGE_PUNCT.sub("", text[left:right])
        if word:
            starts[left] = word
    return [starts[k] for k in sorted(starts)]


def official_word_attention(weights: np.ndarray, word_tokens: Sequence[Sequence[int]]) -> np.ndarray:
    """``[words, words]``: row w is word w's attention over the words before it (see the module
    docstring). ``weights`` is ``[seq, seq]`` (heads averaged); ``word_tokens[w]`` are w's
    positions in it, consecutive."""
    n_words = len(word_tokens)
    seq = weights.shape[0]
    out = np.zeros((n_words, n_words))
    for w, toks in enumerate(word_tokens):
        if not toks:
            continue
        r0 = toks[0]
        acc = np.zeros(seq)
        for k in toks:
            if k == 0:
                continue
            v = np.asarray(weights[k - 1, :r0], dtype=np.float64)
            total = v.sum()
            if total > 0:
                acc[:r0] += v / total
        acc /= len(toks)
        out[w] = [acc[list(ts)].sum() if len(ts) else 0.0 for ts in word_tokens]
    return out


def qfs_official(
    word_attention: np.ndarray, hits: Sequence[int], content: Sequence[bool], top_n: int
) -> list[int]:
    """Indices of the words kept in the query, in text order."""
    if not hits:
        raise InvalidArgumentError("QFS needs at least one triggering word")
    forward = word_attention[list(hits)].mean(axis=0)
    hit_set = set(hits)
    candidates = [w for w in range(len(content)) if content[w] and w not in hit_set]
    ranked = sorted(candidates, key=lambda w: (-float(forward[w]), w))[:top_n]
    return sorted(ranked)
