"""Each question's recall and all-gold from prediction records, as run folders keep them.

A run's ``predictions.jsonl`` holds, per question, the ``retrieved_ids`` in order and the
``gold_chunk_ids``; comparisons that pair two runs question by question, replay a budget or cut a
ranked list at a chunk count all start from these per-question scores, so they are computed here
once (the evaluation runner's own metrics: oracle-chunk recall and the all-gold rate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from efficientrag.retrieval.metrics import all_gold, oracle_recall

Record = Mapping[str, Any]


def question_scores(
    records: Sequence[Record], cut: Callable[[Record], int | None] = lambda r: None
) -> list[tuple[float, float]]:
    """Per question, (recall, all-gold) in percent of its retrieved chunks cut at ``cut(record)``.

    Args:
        records: Prediction records (``retrieved_ids``, ``gold_chunk_ids``).
        cut: How many of a record's chunks count (None: all of them), e.g. a loop's chunk count
            applied to a ranked method's list.
    """
    out = []
    for r in records:
        ids = list(r["retrieved_ids"])[: cut(r)]
        out.append(
            (100.0 * oracle_recall(ids, r["gold_chunk_ids"]), 100.0 * all_gold(ids, r["gold_chunk_ids"]))
        )
    return out


def mean(values: Sequence[float]) -> float:
    """The mean, 0.0 for none."""
    return sum(values) / max(1, len(values))
