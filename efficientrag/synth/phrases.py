"""Word-level matching shared by alignment, the annotation teacher and next-hop construction.

Everything here works on spaCy words (``efficientrag.text.words.split_words``) and compares them by
a *key*: the casefolded word with non-word characters removed, so ``"U.S."`` matches ``"US"`` and
``"Settle,"`` matches ``"Settle"``. Words whose key is empty are punctuation. Content words are the
non-punctuation words that are not English stop words: the words that carry a question's meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

from spacy.lang.en.stop_words import STOP_WORDS

from efficientrag.errors import InvalidArgumentError
from efficientrag.text.normalize import dedup_key

SENTENCE_END = frozenset({".", "!", "?", "...", "…"})
ARTICLES = frozenset({"the", "a", "an"})


def word_key(word: str) -> str:
    return dedup_key(word)


def is_punct(word: str) -> bool:
    return not word_key(word)


def is_content(word: str) -> bool:
    key = word_key(word)
    return bool(key) and word.lower() not in STOP_WORDS and key not in STOP_WORDS


def content_keys(words: Sequence[str]) -> set[str]:
    return {word_key(w) for w in words if is_content(w)}


def loose_key(word: str) -> str:
    """``word_key`` with a plural ``-s`` dropped (``films``/``film``): for overlap between a
    question and a text, where exact equality misses too much; never for alignment."""
    key = word_key(word)
    if len(key) > 4 and key.endswith("s") and not key.endswith("ss"):
        return key[:-1]
    return key


def loose_content_keys(words: Sequence[str]) -> set[str]:
    return {loose_key(w) for w in words if is_content(w)}


def find_phrase(
    words: Sequence[str], phrase: Sequence[str], *, start: int = 0, end: int | None = None
) -> list[int]:
    """Start positions where ``phrase`` occurs in ``words[start:end]``, comparing keys and ignoring
    punctuation on both sides (``"November 18, 1901"`` matches ``November 18 1901``)."""
    spans = find_phrase_spans(words, phrase, start=start, end=end)
    return [s for s, _ in spans]


def find_phrase_spans(
    words: Sequence[str], phrase: Sequence[str], *, start: int = 0, end: int | None = None
) -> list[tuple[int, int]]:
    """``(first, last)`` word positions (inclusive) of every occurrence of ``phrase``; see
    :func:`find_phrase`. Punctuation inside an occurrence is covered by the span."""
    keys = [word_key(w) for w in phrase]
    keys = [k for k in keys if k]
    if not keys:
        return []
    end = len(words) if end is None else min(end, len(words))
    positions = [i for i in range(start, end) if word_key(words[i])]
    seq = [word_key(words[i]) for i in positions]
    out = []
    n = len(keys)
    for p in range(len(seq) - n + 1):
        if seq[p : p + n] == keys:
            out.append((positions[p], positions[p + n - 1]))
    return out


def find_unordered(
    words: Sequence[str], phrase: Sequence[str], *, start: int = 0, end: int | None = None, slack: int = 4
) -> list[tuple[int, int]]:
    """Windows of at most ``len(phrase) + slack`` words that contain every content key of ``phrase``
    in any order: the fallback for reformatted answers (``"18 November 1901"`` against
    ``"November 18, 1901"``). Returns ``(first, last)`` spans, earliest first, non-overlapping."""
    need = [word_key(w) for w in phrase if word_key(w)]
    if not need:
        return []
    need_set = set(need)
    end = len(words) if end is None else min(end, len(words))
    width = len(need) + slack
    out: list[tuple[int, int]] = []
    i = start
    while i < end:
        if word_key(words[i]) in need_set:
            window_end = min(end, i + width)
            found: dict[str, int] = {}
            for j in range(i, window_end):
                k = word_key(words[j])
                if k in need_set and k not in found:
                    found[k] = j
                if len(found) == len(need_set):
                    out.append((i, j))
                    i = j
                    break
        i += 1
    return out


def strip_leading_article(words: Sequence[str]) -> list[str]:
    words = list(words)
    if len(words) > 1 and words[0].lower() in ARTICLES:
        return words[1:]
    return words


def sentence_ranges(words: Sequence[str], *, title_words: int = 0) -> list[tuple[int, int]]:
    """Half-open ``[start, end)`` word ranges of sentences. The first ``title_words`` words (the
    ``"Title:"`` prefix of a chunk) form a range of their own. Rule-based: a sentence ends after a
    ``.``/``!``/``?`` word (spaCy keeps abbreviations such as ``U.S.`` in one word)."""
    ranges: list[tuple[int, int]] = []
    start = 0
    if 0 < title_words <= len(words):
        ranges.append((0, title_words))
        start = title_words
    s = start
    for i in range(start, len(words)):
        if words[i] in SENTENCE_END:
            ranges.append((s, i + 1))
            s = i + 1
    if s < len(words):
        ranges.append((s, len(words)))
    return ranges


def range_of(ranges: Sequence[tuple[int, int]], position: int) -> int:
    for n, (a, b) in enumerate(ranges):
        if a <= position < b:
            return n
    raise InvalidArgumentError(f"position {position} is outside every range")


def minimal_cover(positions_by_key: dict[str, list[int]]) -> tuple[int, int] | None:
    """Shortest ``(first, last)`` window holding at least one position of every key (min-window)."""
    events = sorted((p, k) for k, ps in positions_by_key.items() for p in ps)
    if not events or any(not ps for ps in positions_by_key.values()):
        return None
    need = len(positions_by_key)
    counts: dict[str, int] = {}
    best: tuple[int, int] | None = None
    left = 0
    for pos, key in events:
        counts[key] = counts.get(key, 0) + 1
        while len(counts) == need:
            lpos, lkey = events[left]
            if best is None or pos - lpos < best[1] - best[0]:
                best = (lpos, pos)
            counts[lkey] -= 1
            if counts[lkey] == 0:
                del counts[lkey]
            left += 1
    return best
