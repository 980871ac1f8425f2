"""Hard negatives: for each hop's query, the best-ranked retrieved chunks that are not gold.

The Tagger learns ``terminate`` from these (gold chunks are ``continue``). As in the official
code, the negative is the first of the retriever's top-k hits outside the question's gold chunks.
One addition: a hit that contains the sub-question's answer is skipped too (by default), since it
may well answer the query and would then be a false negative.

``n > 1`` keeps the next non-gold hits too: at inference the Tagger judges the whole top-k, not
only its hardest non-gold chunk, and with a few hundred questions one negative per query leaves
it too few examples to learn from (see docs/synthesis.md, "More negatives").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError
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


def choose_negatives(
    hits: Sequence[Hit],
    gold_ids: set[str],
    answers: Sequence[str],
    *,
    n: int = 1,
    exclude_answer: bool = True,
) -> list[NegativeChoice]:
    """Up to ``n`` negatives in rank order; each records what was skipped before it."""
    if n < 1:
        raise InvalidArgumentError(f"n must be >= 1, got {n}")
    patterns = _answer_patterns(answers) if exclude_answer else []
    skipped_gold = skipped_answer = 0
    chosen: list[NegativeChoice] = []
    for rank, hit in enumerate(hits, start=1):
        if hit.id in gold_ids:
            skipped_gold += 1
            continue
        if patterns:
            text = f" {normalize_answer(hit.chunk.contents)} "
            if any(p.search(text) for p in patterns):
                skipped_answer += 1
                continue
        chosen.append(NegativeChoice(hit, rank, skipped_gold, skipped_answer))
        if len(chosen) == n:
            break
    if chosen:
        return chosen
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
