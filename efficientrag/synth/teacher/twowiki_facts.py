"""2WikiMultihopQA records without evidence triples (``evidences: null``, as in the public train
slices): sub-questions from the supporting-fact paragraphs alone.

2Wiki shares HotpotQA's context format and, per type, one of its two kinds of reasoning, so the
HotpotQA decomposition applies: ``comparison`` is two independent sub-questions; ``compositional``
and ``inference`` are a two-paragraph bridge (hop 1 is the paragraph that mentions the other's
title). ``bridge_comparison`` ("Which film has the director born later, A or B?") is two bridges
side by side: each paragraph the question names (A, B) is a hop-1 sub-question answered by the
entity it mentions (its director), whose paragraph is the hop-2 sub-question that depends on it.
Without the triples the relation is unknown, so sub-questions are phrased "Regarding X: <question>"
and the labeled words come from the answer or, failing that, the supporting sentences.
"""

from __future__ import annotations

from efficientrag.data.schema import Example
from efficientrag.synth.records import Decomposition, Reject, SubQuestion
from efficientrag.synth.teacher.base import R_MALFORMED
from efficientrag.synth.teacher.hotpotqa import (
    R_AMBIGUOUS,
    R_GOLD_COUNT,
    chunk_id_of,
    decompose_pair,
    gold_paragraphs,
    mention,
    names,
    short_title,
)
from efficientrag.synth.teacher.paragraphs import ChunkLookup, RawParagraph

PAIR_TYPES = {"comparison": "comparison", "compositional": "bridge", "inference": "bridge"}


def decompose_from_facts(example: Example, lookup: ChunkLookup) -> Decomposition:
    qtype = str(example.raw.get("type") or example.type or "")
    golds = gold_paragraphs(example.raw)
    if qtype == "bridge_comparison":
        return Decomposition(_two_bridges(example, lookup, golds), qtype)
    if qtype not in PAIR_TYPES:
        raise Reject(R_MALFORMED, f"unknown 2WikiMultihopQA type {qtype!r}")
    pair = decompose_pair(example, lookup, golds, PAIR_TYPES[qtype], possessive_relations=True)
    return Decomposition(pair.sub_questions, qtype)


def _two_bridges(example: Example, lookup: ChunkLookup, golds: list[RawParagraph]) -> list[SubQuestion]:
    if len(golds) != 4:
        raise Reject(R_GOLD_COUNT, f"{len(golds)} gold paragraphs (bridge_comparison needs 4)")
    question = example.question
    heads = [g for g in golds if names(question, g)]
    if len(heads) != 2:
        raise Reject(R_AMBIGUOUS, f"the question names {len(heads)} of the 4 gold paragraphs, not 2")
    tails = [g for g in golds if g not in heads]
    pairs: list[tuple[RawParagraph, RawParagraph, str]] = []
    for head in heads:
        linked = [(t, m) for t in tails if (m := mention(head, t.title))]
        if len(linked) != 1:
            raise Reject(R_AMBIGUOUS, f"{head.title!r} mentions {len(linked)} of the other gold paragraphs")
        pairs.append((head, *linked[0]))
    if pairs[0][1] is pairs[1][1]:
        raise Reject(R_AMBIGUOUS, "both compared paragraphs lead to the same paragraph")
    answer = example.answer.strip()
    subs: list[SubQuestion] = []
    for head, tail, bridge in pairs:
        first = len(subs) + 1
        subs.append(
            SubQuestion(
                first,
                f"Regarding {short_title(head.title)}: {question}",
                bridge,
                [],
                chunk_id_of(head, lookup),
            )
        )
        subs.append(
            SubQuestion(
                first + 1, f"Regarding {bridge}: {question}", answer, [first], chunk_id_of(tail, lookup)
            )
        )
    return subs
