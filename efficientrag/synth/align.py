"""Align words an LLM (or the teacher) copied from a text back onto that text's words.

The paper labels chunk words by aligning the LLM's ``extracted_words`` onto the chunk with spaCy,
following LLMLingua-2; the official code walks a moving pointer and takes the first equal lemma
forward, then backward, within a window. That greedy walk sends repeated words to the wrong
occurrence (the first ``"the"``, the first of two ``"Audrey Hepburn"``). Here the in-order part is
solved exactly instead: a monotone alignment that first maximizes the number of matched words,
then the number of adjacent pairs kept adjacent, then compactness (fewest source words skipped
between aligned words), so a copied phrase lands on the occurrence where it is contiguous, and
words copied from one sentence land in that sentence rather than on an earlier mention in the
title. Target words it cannot place in order (the LLM reordered them) get a second,
windowed greedy pass around their neighbours. Words that are not in the source (invented) stay
unmatched and lower the rate; punctuation is matched right after the previous word or between
the positions of its aligned neighbours, and never counts toward the rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError
from efficientrag.synth.phrases import is_content, word_key
from efficientrag.text.words import lemmatizer, split_words, word_lemmas

# Scores of the in-order alignment, in strict priority: matched words, then adjacent pairs kept
# adjacent, then compactness (each source word skipped between two aligned words costs GAP).
MATCH = 1_000_000_000
ADJACENT = 10_000
GAP = 1
PUNCT = 1  # punctuation is a tie-breaker, never a reason to move a word


@dataclass(frozen=True)
class Alignment:
    labels: list[int]  # per source word: 1 when some target word was aligned onto it
    matched: list[int | None]  # per target word: the source position it went to, or None
    targets: list[str]  # the target words, re-split into spaCy words
    rate: float  # matched / total over non-punctuation target words (0.0 when there are none)

    @property
    def n_unmatched(self) -> int:
        return sum(1 for t, m in zip(self.targets, self.matched, strict=True) if m is None and word_key(t))


def split_targets(target_words: Iterable[str]) -> list[str]:
    """LLM output may hold phrases (``"Audrey Hepburn"``) or words with punctuation attached
    (``"1975)"``): re-split each item the way the source was split."""
    out: list[str] = []
    for item in target_words:
        out.extend(split_words(str(item)))
    return out


def align_words(
    target_words: Sequence[str],
    source_words: Sequence[str],
    *,
    window: int = 150,
    use_lemmas: bool = True,
    eligible: Sequence[bool] | None = None,
) -> Alignment:
    """Map each target word, in order, onto a distinct source word.

    ``window`` bounds the second (reordered-words) pass around a word's aligned neighbour;
    ``use_lemmas`` also matches content words by lemma when ``en_core_web_sm`` is installed
    (``"won"``/``"win"``); ``eligible`` masks source positions that may not receive a label
    (the ``Query:``/``Info:`` markers of a Filter input).

    Args:
        target_words: The words to place (a teacher's labeled words or next-hop query); phrases
            and attached punctuation are re-split into words first.
        source_words: The words of the text they should come from (a chunk, or a Filter input).
        window: Source positions around a word's aligned neighbour the reordered-words pass
            searches.
        use_lemmas: Also match content words by lemma (needs spaCy's ``en_core_web_sm``).
        eligible: Per source word, whether it may receive a label (None: all may).

    Returns:
        Per-source-word labels (1: a target word aligned there), each target word's position,
        and the rate of content target words placed.

    Raises:
        ValueError: ``eligible`` and ``source_words`` differ in length.
    """
    targets = split_targets(target_words)
    source = list(source_words)
    n = len(source)
    if eligible is not None and len(eligible) != n:
        raise InvalidArgumentError(f"eligible has {len(eligible)} entries for {n} source words")
    ok = list(eligible) if eligible is not None else [True] * n
    matcher = _Matcher(targets, source, ok, use_lemmas=use_lemmas)

    matched: list[int | None] = [None] * len(targets)
    for i, c in _monotone(targets, matcher, n):
        matched[i] = c
    used = {c for c in matched if c is not None}
    _reordered_pass(targets, matched, used, matcher, window)
    _punctuation_pass(targets, matched, used, matcher)

    labels = [0] * n
    for c in matched:
        if c is not None:
            labels[c] = 1
    content = [i for i, t in enumerate(targets) if word_key(t)]
    hit = sum(1 for i in content if matched[i] is not None)
    rate = hit / len(content) if content else 0.0
    return Alignment(labels=labels, matched=matched, targets=targets, rate=rate)


class _Matcher:
    """Candidate source positions per target word (by key, and by lemma for content words)."""

    def __init__(self, targets: list[str], source: list[str], ok: list[bool], *, use_lemmas: bool) -> None:
        by_key: dict[str, list[int]] = {}
        for j, w in enumerate(source):
            if ok[j]:
                by_key.setdefault(word_key(w) or w, []).append(j)
        by_lemma: dict[str, list[int]] = {}
        lemmas_t: list[str] | None = None
        if use_lemmas and lemmatizer() is not None and targets and source:
            lemmas_s = word_lemmas(source)
            lemmas_t = word_lemmas(targets)
            for j, (w, lem) in enumerate(zip(source, lemmas_s, strict=True)):
                if ok[j] and is_content(w):
                    by_lemma.setdefault(lem, []).append(j)
        self.candidates: list[list[int]] = []
        for i, t in enumerate(targets):
            key = word_key(t)
            cands = set(by_key.get(key or t, []))
            if lemmas_t is not None and key and is_content(t):
                cands.update(by_lemma.get(lemmas_t[i], []))
            self.candidates.append(sorted(cands))


class _PrefixMax:
    """Fenwick tree over positions answering "best entry ending before position c"."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.tree: list[tuple[int, int, int, int] | None] = [None] * (n + 1)

    def update(self, pos: int, entry: tuple[int, int, int, int]) -> None:
        i = pos + 1
        while i <= self.n:
            cur = self.tree[i]
            if cur is None or _better(entry, cur):
                self.tree[i] = entry
            i += i & -i

    def query(self, pos: int) -> tuple[int, int, int, int] | None:
        """Best entry at positions < pos."""
        best = None
        i = pos
        while i > 0:
            cur = self.tree[i]
            if cur is not None and (best is None or _better(cur, best)):
                best = cur
            i -= i & -i
        return best


def _better(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    """Entries are (score, -position, target, position): higher score, then earlier position."""
    return (a[0], a[1]) > (b[0], b[1])


def _monotone(targets: list[str], matcher: _Matcher, n: int) -> list[tuple[int, int]]:
    """Best order-preserving alignment as (target, source) pairs."""
    prefix = _PrefixMax(n)
    best: list[dict[int, tuple[int, tuple[int, int] | None]]] = []
    top: tuple[int, int, int, int] | None = None
    for i, t in enumerate(targets):
        row: dict[int, tuple[int, tuple[int, int] | None]] = {}
        punct = not word_key(t)
        prev_row = best[i - 1] if i else {}
        for c in matcher.candidates[i]:
            options: list[tuple[int, tuple[int, int] | None]] = []
            if c - 1 in prev_row:
                gain = (PUNCT if punct else MATCH) + ADJACENT
                options.append((prev_row[c - 1][0] + gain, (i - 1, c - 1)))
            if not punct:
                before = prefix.query(c)
                if before is not None:
                    # before[0] is score + GAP * position, so this charges GAP per skipped word.
                    options.append((before[0] - GAP * (c - 1) + MATCH, (before[2], before[3])))
                else:
                    options.append((MATCH, None))
            if options:
                row[c] = max(options, key=lambda o: o[0])
        best.append(row)
        for c, (score, _) in row.items():
            entry = (score, -c, i, c)
            if top is None or _better(entry, top):
                top = entry
        for c, (score, _) in row.items():
            prefix.update(c, (score + GAP * c, -c, i, c))
    pairs: list[tuple[int, int]] = []
    node: tuple[int, int] | None = (top[2], top[3]) if top is not None else None
    while node is not None:
        pairs.append(node)
        node = best[node[0]][node[1]][1]
    pairs.reverse()
    return pairs


def _reordered_pass(
    targets: list[str], matched: list[int | None], used: set[int], matcher: _Matcher, window: int
) -> None:
    for i, t in enumerate(targets):
        if matched[i] is not None or not word_key(t) or not matcher.candidates[i]:
            continue
        anchor = _anchor(matched, i)
        free = [c for c in matcher.candidates[i] if c not in used and abs(c - anchor) <= window]
        if not free:
            continue
        forward = [c for c in free if c > anchor]
        choice = forward[0] if forward else max(free)
        matched[i] = choice
        used.add(choice)


def _punctuation_pass(
    targets: list[str], matched: list[int | None], used: set[int], matcher: _Matcher
) -> None:
    """Punctuation between two aligned words goes to the same mark between their positions
    (a next-hop query keeps the "?" of its question after dropping the words before it)."""
    for i, t in enumerate(targets):
        if matched[i] is not None or word_key(t):
            continue
        before = next((matched[k] for k in range(i - 1, -1, -1) if matched[k] is not None), -1)
        after = next((matched[k] for k in range(i + 1, len(targets)) if matched[k] is not None), None)
        if after is None or after <= before:
            continue
        free = [c for c in matcher.candidates[i] if before < c < after and c not in used]
        if free:
            matched[i] = free[0]
            used.add(free[0])


def _anchor(matched: list[int | None], i: int) -> int:
    for k in range(i - 1, -1, -1):
        if matched[k] is not None:
            return matched[k]  # type: ignore[return-value]
    for k in range(i + 1, len(matched)):
        if matched[k] is not None:
            return matched[k] - 1  # type: ignore[operator]
    return -1
