"""Hard negatives: for each hop's query, the best-ranked retrieved chunk that is not gold.

The Tagger learns ``terminate`` from these (gold chunks are ``continue``). As in the official
code, the negative is the first of the retriever's top-k hits outside the question's gold chunks.
One addition: a hit that contains the sub-question's answer is skipped too (by default), since it
may well answer the query and would then be a false negative.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.retrieval.base import Hit
from efficientrag.synth.records import Reject
from efficientrag.synth.teacher.evidence import YES_NO
from efficientrag.text.normalize import normalize_answer

R_NO_NEGATIVE = "no negative in top-k"


@dataclass(frozen=True)
class NegativeChoice:
    hit: Hit
    rank: int  # 1-based rank among the retriever's hits
    skipped_gold: int
    skipped_answer: int


def choose_negative(
    hits: Sequence[Hit], gold_ids: set[str], answers: Sequence[str], *, exclude_answer: bool = True
) -> NegativeChoice:
    patterns = _answer_patterns(answers) if exclude_answer else []
    skipped_gold = skipped_answer = 0
    for rank, hit in enumerate(hits, start=1):
        if hit.id in gold_ids:
            skipped_gold += 1
            continue
        if patterns:
            text = f" {normalize_answer(hit.chunk.contents)} "
            if any(p.search(text) for p in patterns):
                skipped_answer += 1
                continue
        return NegativeChoice(hit, rank, skipped_gold, skipped_answer)
    raise Reject(
        R_NO_NEGATIVE,
        f"{len(hits)} hits: {skipped_gold} gold, {skipped_answer} containing the answer",
    )


def _answer_patterns(answers: Sequence[str]) -> list[re.Pattern[str]]:
    out = []
    for a in answers:
        norm = normalize_answer(a)
        if norm and norm not in YES_NO:
            out.append(re.compile(rf" {re.escape(norm)} "))
    return out
