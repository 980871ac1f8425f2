"""Next-hop queries: what the Labeler sees at each hop, and what the Filter learns to write.

The query of a sub-question without dependencies is the original question. A dependent
sub-question's query is built from the query of its dependency (the deepest one when there are
several; a 3-4 hop chain builds query on query) and the dependencies' labeled words, by the
paper's rule: only words of the previous query and of the known information, never added, never
reordered. The Filter's input is ``Query: <previous query> Info: <labeled words>; Info: ...``
and its labels mark the words of the next query in it (found by alignment, so a query an LLM
wrote is checked the same way).

The annotation teacher's rule (:func:`teacher_next_hop`): from the previous query, drop the span
the dependency resolved (the shortest stretch of the previous query holding every content word it
shares with the dependency's sub-question, if at most ``max_span_words`` long, widened once on
each side onto an adjacent word naming the same relation, "birthplace" for "born"; else just
those words), then append each dependency's answer, taken from its labeled words:
``"What did the actress in My Fair Lady win a Tony for?"`` + ``Audrey Hepburn`` ->
``"What did the win a Tony for ? Audrey Hepburn"`` (the official data looks the same:
``"When was founded ? Houston Baptist University"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.inputs import INFO_MARK, INFO_SEP, QUERY_MARK, filter_words
from efficientrag.synth.align import Alignment, align_words
from efficientrag.synth.phrases import (
    find_phrase_spans,
    find_unordered,
    is_content,
    loose_content_keys,
    loose_key,
    minimal_cover,
    strip_leading_article,
)
from efficientrag.synth.records import Reject
from efficientrag.synth.teacher.base import DependencyInfo
from efficientrag.synth.teacher.relations import related_keys
from efficientrag.text.words import split_words

R_DEP_ANSWER = "dependency answer not labeled"
R_FILTER_ALIGN = "next-hop query not aligned"


def teacher_next_hop(
    prev_query_words: Sequence[str], dependencies: Sequence[DependencyInfo], *, max_span_words: int = 12
) -> list[str]:
    prev = list(prev_query_words)
    removed: set[int] = set()
    appended: list[str] = []
    for dep in dependencies:
        removed |= resolved_positions(
            prev, dep.sub_question.sub_question, removed, max_span_words=max_span_words
        )
        for answer in dep.sub_question.answers():
            words = answer_in_info(dep.info_words, answer)
            if words is None:
                raise Reject(
                    R_DEP_ANSWER,
                    f"answer {answer!r} of sub-question {dep.sub_question.idx} is not in its labeled words "
                    f"{' '.join(dep.info_words)!r}",
                )
            appended.extend(words)
    return [w for i, w in enumerate(prev) if i not in removed] + appended


def resolved_positions(
    query_words: Sequence[str], sub_question: str, skip: set[int], *, max_span_words: int
) -> set[int]:
    """Positions of ``query_words`` that ``sub_question`` answers (see the module docstring)."""
    shared = loose_content_keys(split_words(sub_question))
    by_key: dict[str, list[int]] = {}
    for i, w in enumerate(query_words):
        if i not in skip and is_content(w) and loose_key(w) in shared:
            by_key.setdefault(loose_key(w), []).append(i)
    cover = minimal_cover(by_key)
    if cover is None:
        return set()
    first, last = cover
    if last - first + 1 > max_span_words:
        return {i for ps in by_key.values() for i in ps if first <= i <= last}
    related = related_keys(shared)
    first = _widen(query_words, first, -1, related, skip)
    last = _widen(query_words, last, +1, related, skip)
    return {i for i in range(first, last + 1) if i not in skip}


def _widen(
    words: Sequence[str], edge: int, step: int, related: set[str], skip: set[int], gap: int = 3
) -> int:
    """Move a span edge once over at most ``gap`` stop words/punctuation onto a word naming the
    same relation (``"the birthplace of"`` + ``Antonio Vivaldi`` for "Where was Antonio Vivaldi
    born?"). Only once: the next such word usually belongs to another hop."""
    i = edge + step
    for _ in range(gap + 1):
        if not 0 <= i < len(words) or i in skip:
            return edge
        if is_content(words[i]):
            return i if loose_key(words[i]) in related else edge
        i += step
    return edge


def answer_in_info(info_words: Sequence[str], answer: str) -> list[str] | None:
    """The answer as it is written in the labeled words (so the query aligns onto the Info)."""
    words = split_words(answer)
    for candidate in (words, strip_leading_article(words)):
        spans = find_phrase_spans(info_words, candidate)
        if spans:
            first, last = spans[0]
            return list(info_words[first : last + 1])
    spans = find_unordered(info_words, words)
    if spans:
        first, last = spans[0]
        keys = {loose_key(w) for w in words}
        return [w for w in info_words[first : last + 1] if loose_key(w) in keys]
    return None


@dataclass(frozen=True)
class FilterTarget:
    words: list[str]  # the Filter input: Query: ... Info: ...
    labels: list[int]  # 1 on the words that form the next query
    query_words: list[str]  # the labeled words, in order: the next query as the Filter writes it
    alignment: Alignment


def filter_target(
    prev_query_words: Sequence[str], infos: Sequence[Sequence[str]], next_query_words: Sequence[str]
) -> FilterTarget:
    """Align the next query onto the Filter input; the ``Query:``/``Info:`` markers never get a label."""
    words = filter_words(list(prev_query_words), [list(i) for i in infos])
    eligible = _marker_mask(words, len(prev_query_words), [len(i) for i in infos])
    alignment = align_words(list(next_query_words), words, eligible=eligible)
    labels = alignment.labels
    return FilterTarget(words, labels, [w for w, lab in zip(words, labels, strict=True) if lab], alignment)


def _marker_mask(words: list[str], n_query: int, info_lengths: list[int]) -> list[bool]:
    mask = [False] * len(QUERY_MARK) + [True] * n_query
    for n, length in enumerate(info_lengths):
        if n:
            mask.append(False)  # INFO_SEP
        mask.extend([False] * len(INFO_MARK))
        mask.extend([True] * length)
    if len(mask) != len(words):
        raise InvalidArgumentError(
            f"filter input has {len(words)} words, expected {len(mask)} ({INFO_SEP!r} format changed?)"
        )
    return mask
