"""DRAGIN's RIND (Real-time Information Needs Detection): when to retrieve.

Paper (Eqs. 1-5), per generated token t_i of the output T = t_1..t_n::

    H_i      = -sum_v p_i(v) log p_i(v)              entropy of the next-token distribution (nats)
    a_max(i) = max_{j > i} A[j, i]                   largest attention a later output token pays to t_i
                                                     (last layer, heads averaged, row = query j)
    s_i      = 0 if t_i is a stopword else 1
    S(t_i)   = H_i * a_max(i) * s_i                  retrieval fires at the first i with S(t_i) > theta

Official code (``AttnWeightRAG``), per whitespace word w of the newly generated text, with the
attention recomputed over that text alone::

    a(w)   = sum over w's tokens k of  mean_heads( max_{q >= k} A_h[q, k] )   (diagonal included)
    H(w)   = mean over w's tokens of H_k
    score  = a(w) / sum_{w' in sentence} a(w') * H(w) * |sentence|           (per spaCy sentence)

and a sentence triggers when any of its words scores above theta. These functions are pure, so the
tests can check them against hand computation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from efficientrag.errors import InvalidArgumentError


def rind_paper(
    entropies: Sequence[float], weights: np.ndarray, start: int, content: Sequence[bool]
) -> np.ndarray:
    """S(t_i) for the ``len(entropies)`` output tokens at positions ``start, start + 1, ...`` of
    the attention matrix ``weights`` (``[seq, seq]``, row = query, heads averaged)."""
    n = len(entropies)
    if len(content) != n:
        raise InvalidArgumentError(f"{len(content)} indicator values for {n} tokens")
    if start + n > weights.shape[0]:
        raise InvalidArgumentError(
            f"tokens {start}..{start + n} lie outside the {weights.shape[0]}-position attention"
        )
    block = np.asarray(weights[start : start + n, start : start + n], dtype=np.float64)
    later = np.tril(block, k=-1)  # row j > column i: attention of a later output token to t_i
    a_max = later.max(axis=0) if n else np.zeros(0)
    return np.asarray(entropies, dtype=np.float64) * a_max * np.asarray(content, dtype=np.float64)


def token_influence_official(per_head: np.ndarray) -> np.ndarray:
    """Per key position: the largest attention any query (itself included) pays it, per head, then
    the mean over heads (``per_head`` is ``[heads, seq, seq]``)."""
    return np.asarray(per_head, dtype=np.float64).max(axis=1).mean(axis=0)


def sentence_scores_official(
    word_attention: Sequence[float], word_entropy: Sequence[float], sentences: Sequence[range]
) -> np.ndarray:
    """The official per-word score; ``sentences`` are ranges of word indices."""
    attn = np.asarray(word_attention, dtype=np.float64)
    ent = np.asarray(word_entropy, dtype=np.float64)
    scores = np.zeros(len(attn))
    for sent in sentences:
        idx = np.arange(sent.start, sent.stop)
        total = attn[idx].sum()
        if len(idx) == 0 or total <= 0:
            continue
        scores[idx] = attn[idx] / total * ent[idx] * len(idx)
    return scores


def covering(token_spans: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[list[int]]:
    """For each character span, the tokens whose (non-empty) span overlaps it."""
    out = []
    for a, b in spans:
        out.append([k for k, (s, e) in enumerate(token_spans) if e > s and s < b and e > a])
    return out


def spans_of(pieces: Sequence[str], offset: int = 0) -> list[tuple[int, int]]:
    spans, pos = [], offset
    for piece in pieces:
        spans.append((pos, pos + len(piece)))
        pos += len(piece)
    return spans
