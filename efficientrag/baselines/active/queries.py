"""Query formation helpers shared by FLARE and the fixed-interval baselines.

FLARE's masked query deletes the look-ahead tokens whose probability is below beta (the slides:
"Joe Biden attended , where he earned ." with the low-confidence spans gone); its explicit query
asks one question per low-probability span and merges the result lists by rank. Both official
codes cut long queries to their last 64 tokens before searching.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from efficientrag.retrieval.base import Hit

_SPACE = re.compile(r"\s+")


def below(p: float, threshold: float, inclusive: bool) -> bool:
    """The papers' "p < threshold"; the official FLARE code's "p <= threshold"."""
    return p <= threshold if inclusive else p < threshold


def tidy(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def masked_query(pieces: Sequence[str], probs: Sequence[float], beta: float, inclusive: bool = False) -> str:
    """The sentence with every token below ``beta`` deleted."""
    kept = [t for t, p in zip(pieces, probs, strict=True) if not below(p, beta, inclusive)]
    return tidy("".join(kept))


def low_spans(
    pieces: Sequence[str], probs: Sequence[float], beta: float, *, inclusive: bool = False, gap: int = 0
) -> list[tuple[int, int]]:
    """Token ranges ``[a, b)`` of the low-probability spans: runs of tokens below ``beta`` (runs at
    most ``gap`` tokens apart are merged), widened to whole words so a question is never asked
    about half a word."""
    low = [i for i, p in enumerate(probs) if below(p, beta, inclusive)]
    runs: list[list[int]] = []
    for i in low:
        if runs and i - runs[-1][1] <= gap + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    spans: list[tuple[int, int]] = []
    for a, b in runs:
        while a > 0 and glued(pieces[a - 1], pieces[a]):
            a -= 1
        b += 1
        while b < len(pieces) and glued(pieces[b - 1], pieces[b]):
            b += 1
        if spans and a <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(b, spans[-1][1]))
        else:
            spans.append((a, b))
    return spans


def glued(prev: str, piece: str) -> bool:
    """``piece`` continues the word ``prev`` ends: a letter or digit on both sides of the boundary."""
    return bool(prev) and bool(piece) and prev[-1].isalnum() and piece[0].isalnum()


def interleave(hit_lists: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Round-robin by rank over the lists (first hits of every list, then the second ones, ...),
    skipping chunks already taken, until ``k`` are collected."""
    out: list[Hit] = []
    seen: set[str] = set()
    depth = max((len(h) for h in hit_lists), default=0)
    for rank in range(depth):
        for hits in hit_lists:
            if rank < len(hits) and hits[rank].id not in seen:
                seen.add(hits[rank].id)
                out.append(hits[rank])
                if len(out) == k:
                    return out
    return out


class QueryTrimmer:
    """Keeps the last ``max_tokens`` tokens of a query: tokens of the generator's own tokenizer
    when it has one (a local model), whitespace words otherwise. ``None`` keeps queries whole."""

    def __init__(self, max_tokens: int | None, tokenizer: Any = None) -> None:
        self.max_tokens = max_tokens
        self.tokenizer = tokenizer

    def __call__(self, query: str) -> str:
        if self.max_tokens is None:
            return query
        if self.tokenizer is None:
            words = query.split()
            return " ".join(words[-self.max_tokens :])
        ids = self.tokenizer(query, add_special_tokens=False)["input_ids"]
        if len(ids) <= self.max_tokens:
            return query
        return tidy(self.tokenizer.decode(ids[-self.max_tokens :], skip_special_tokens=True))
