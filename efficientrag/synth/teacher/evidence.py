"""The annotation teacher's token labels: which chunk words answer a sub-question.

An LLM asked for "the words of the chunk needed to answer" typically returns the answer and the
few words around it that tie it to the question (``"Audrey Hepburn" ... "Tony Award" ... "Ondine"``).
Without an LLM this is approximated from the gold answer:

1. find the answer in the chunk: as a phrase (case, punctuation and a leading article ignored),
   else as a window holding all of its words in any order (reformatted dates); among several
   occurrences prefer one in a supporting sentence, then outside the title, then in the sentence
   sharing most words with the sub-question, then the first;
2. add the sub-question's content words (not stop words, not punctuation) found in that sentence;
3. when the answer is not in the chunk (yes/no answers; answers worded differently from the text):
   the content words shared by the sub-question and the supporting sentences (when annotated,
   otherwise the one sentence sharing most) - or a reject when they share none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.synth.phrases import (
    find_phrase_spans,
    find_unordered,
    is_content,
    loose_content_keys,
    loose_key,
    range_of,
    strip_leading_article,
    word_key,
)
from efficientrag.synth.records import Reject
from efficientrag.synth.teacher.paragraphs import ChunkLayout
from efficientrag.text.normalize import normalize_answer
from efficientrag.text.words import split_words

R_ANSWER_NOT_IN_CHUNK = "answer not in chunk"
YES_NO = frozenset({"yes", "no"})


@dataclass(frozen=True)
class Evidence:
    indices: list[int]  # chunk word positions, ascending
    method: str  # "answer" | "answer-unordered" | "overlap" (no answer found)
    answers_found: int  # how many answer parts were located


def extract_evidence(layout: ChunkLayout, answers: Sequence[str], query: str) -> Evidence:
    words = layout.words
    query_keys = loose_content_keys(split_words(query))
    picked: set[int] = set()
    found = 0
    unordered = False
    for answer in answers:
        if normalize_answer(answer) in YES_NO:
            continue
        span, was_unordered = _locate(layout, split_words(answer), query_keys)
        if span is None:
            continue
        found += 1
        unordered = unordered or was_unordered
        picked.update(span)
        sentence = layout.sentences[range_of(layout.sentences, span[0])]
        picked.update(_overlap(words, sentence, query_keys))
    if found:
        return Evidence(sorted(picked), "answer-unordered" if unordered else "answer", found)
    overlap = _fallback_overlap(layout, query_keys)
    if not overlap:
        shown = "; ".join(answers)
        raise Reject(R_ANSWER_NOT_IN_CHUNK, f"{shown!r} not found and no sub-question word in the chunk")
    return Evidence(overlap, "overlap", 0)


def _locate(layout: ChunkLayout, answer: list[str], query_keys: set[str]) -> tuple[list[int] | None, bool]:
    words = layout.words
    spans = find_phrase_spans(words, answer)
    if not spans:
        stripped = strip_leading_article(answer)
        if stripped != answer:
            spans = find_phrase_spans(words, stripped)
    if spans:
        first, last = max(spans, key=lambda s: _rank(layout, s[0], query_keys))
        return list(range(first, last + 1)), False
    candidates: list[list[int]] = []
    need = {word_key(w) for w in answer if word_key(w)}
    if len(need) < 2:
        return None, False
    for a, b in layout.sentences:
        for first, last in find_unordered(words, answer, start=a, end=b):
            candidates.append([i for i in range(first, last + 1) if word_key(words[i]) in need])
    if not candidates:
        return None, False
    return max(candidates, key=lambda c: _rank(layout, c[0], query_keys)), True


def _rank(layout: ChunkLayout, position: int, query_keys: set[str]) -> tuple[int, int, int, int]:
    n = range_of(layout.sentences, position)
    supported = int(layout.support is not None and n in layout.support)
    outside_title = int(not (layout.title_words and n == 0))
    sentence = layout.sentences[n]
    return (supported, outside_title, len(_overlap(layout.words, sentence, query_keys)), -position)


def _overlap(words: Sequence[str], sentence: tuple[int, int], query_keys: set[str]) -> list[int]:
    a, b = sentence
    return [i for i in range(a, b) if is_content(words[i]) and loose_key(words[i]) in query_keys]


def _fallback_overlap(layout: ChunkLayout, query_keys: set[str]) -> list[int]:
    body = [n for n in range(len(layout.sentences)) if not (layout.title_words and n == 0)]
    if layout.support:
        picked = [i for n in layout.support for i in _overlap(layout.words, layout.sentences[n], query_keys)]
        if picked:
            return sorted(set(picked))
    best: list[int] = []
    for n in body:
        hits = _overlap(layout.words, layout.sentences[n], query_keys)
        if len(hits) > len(best):
            best = hits
    if not best and layout.title_words:
        best = _overlap(layout.words, layout.sentences[0], query_keys)
    return best
