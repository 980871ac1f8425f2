"""Retrieval metrics with the definitions the papers use.

* Oracle-chunk recall (EfficientRAG, ``evaluation/retrieve.py``): the share of a question's gold
  chunks that appear among the unique retrieved chunks; averaged over questions.
* All-gold rate: the share of questions for which every gold chunk was retrieved.
* Number of chunks: unique retrieved chunks per question, and the count with duplicates across
  hops (the official script counts duplicates).
* Answer-containment recall (FlashRAG, ``retrieval_recall_top{k}``): 1 when any retrieved chunk
  contains a normalized gold answer as a substring. Yes/no answers are not special-cased, exactly
  as in FlashRAG, so the number is low for comparison questions with yes/no answers.
* Gold fates: how many gold chunks met each fate (kept, pruned, never retrieved...); each method
  says which fate a chunk met (``efficientrag.eval.gold_fate`` for EfficientRAG,
  ``efficientrag.treehop.gold_fate`` for TreeHop), and :func:`tally_fates` counts them.

They sit here, under the retrieval layer, because TreeHop's and the reranker's training score
their checkpoints with them (:func:`protocol_score`) below the evaluation layer; the evaluation
runner imports them from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError
from efficientrag.text.normalize import normalize_answer


def unique_in_order(ids: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for x in ids:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def oracle_recall(retrieved_ids: Sequence[str], gold_ids: Sequence[str]) -> float:
    gold = set(gold_ids)
    if not gold:
        raise InvalidArgumentError("oracle recall is undefined for a question without gold chunks")
    return len(gold.intersection(retrieved_ids)) / len(gold)


def all_gold(retrieved_ids: Sequence[str], gold_ids: Sequence[str]) -> bool:
    return set(gold_ids).issubset(retrieved_ids)


def answer_contained(texts: Sequence[str], answers: Sequence[str]) -> bool:
    norm_answers = [a for a in (normalize_answer(x) for x in answers) if a]
    if not norm_answers:
        return False
    return any(a in normalize_answer(t) for t in texts for a in norm_answers)


@dataclass
class RetrievalScores:
    """Per-question scores for one retrieved list (variable length for iterative methods)."""

    recall: float
    all_gold: bool
    answer_recall: bool
    num_chunks: int
    num_chunks_with_dups: int

    def to_dict(self) -> dict[str, float | int | bool]:
        return {
            "recall": self.recall,
            "all_gold": self.all_gold,
            "answer_recall": self.answer_recall,
            "num_chunks": self.num_chunks,
            "num_chunks_with_dups": self.num_chunks_with_dups,
        }


def score_retrieval(
    retrieved_ids: Sequence[str],
    retrieved_texts: Sequence[str],
    gold_ids: Sequence[str],
    answers: Sequence[str],
) -> RetrievalScores:
    """Scores for everything one question retrieved (ids may repeat across hops)."""
    unique = unique_in_order(retrieved_ids)
    return RetrievalScores(
        recall=oracle_recall(unique, gold_ids),
        all_gold=all_gold(unique, gold_ids),
        answer_recall=answer_contained(retrieved_texts, answers),
        num_chunks=len(unique),
        num_chunks_with_dups=len(retrieved_ids),
    )


def score_at_ks(
    ranked_ids: Sequence[str],
    ranked_texts: Sequence[str],
    gold_ids: Sequence[str],
    answers: Sequence[str],
    ks: Sequence[int],
) -> dict[int, RetrievalScores]:
    """Direct-R style scores at several cut-offs of one ranked list."""
    return {k: score_retrieval(ranked_ids[:k], ranked_texts[:k], gold_ids, answers) for k in sorted(set(ks))}


def mean_scores(scores: Sequence[RetrievalScores]) -> dict[str, float]:
    """Averages in percent for recall/all-gold/answer recall, raw means for chunk counts."""
    n = len(scores)
    if n == 0:
        return {"n": 0}
    return {
        "n": n,
        "recall": 100.0 * sum(s.recall for s in scores) / n,
        "all_gold": 100.0 * sum(s.all_gold for s in scores) / n,
        "answer_recall": 100.0 * sum(s.answer_recall for s in scores) / n,
        "num_chunks": sum(s.num_chunks for s in scores) / n,
        "num_chunks_with_dups": sum(s.num_chunks_with_dups for s in scores) / n,
    }


def protocol_score(per_pool: Mapping[str, Mapping[str, float]]) -> float:
    """The score the EfficientRAG protocol chooses settings and checkpoints by.

    Every training file counts the same however many questions it has, and a method must find
    whole evidence sets (all-gold), not only single chunks (recall).

    Args:
        per_pool: Per training file, :func:`mean_scores` of its validation questions (``recall``
            and ``all_gold`` in %).

    Returns:
        The mean over files of (recall + all-gold) / 2; 0.0 for no files.
    """
    if not per_pool:
        return 0.0
    return sum((s["recall"] + s["all_gold"]) / 2 for s in per_pool.values()) / len(per_pool)


def tally_fates(fates_per_record: Iterable[Mapping[str, str]], fates: Iterable[str]) -> dict[str, int]:
    """``gold`` (every gold chunk) and how many met each fate.

    Args:
        fates_per_record: per prediction record, gold chunk id -> the fate it met.
        fates: the kinds counted (each appears in the result, with 0 when none met it).

    Returns:
        ``{"gold": n, fate: count, ...}``.
    """
    counts = {"gold": 0, **dict.fromkeys(fates, 0)}
    for record in fates_per_record:
        for fate in record.values():
            counts["gold"] += 1
            counts[fate] += 1
    return counts
