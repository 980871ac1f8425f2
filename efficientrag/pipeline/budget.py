"""The chunk budget's last step: which of the chunks a question's loop judged it returns.

Under ``budget_policy="best"`` or ``"rerank"`` (or with no budget) the loop runs to its end whatever
the budget, and this choice reads only what the loop recorded: the pool (floor and Continue chunks),
every judgement with the hop it was made at, and each chunk's best rank in the searches. Being one
function of those, it can be replayed from a recorded trace under other budget settings
(``judgements_from_trace``) without running a model again: ``benchmarks/budget_replay.py`` chooses
``fill_from`` and ``rank_weight`` that way, and ``benchmarks/rerank_containment.py`` the hop
calibration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.pipeline.calibration import calibrate
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.trace import HitRecord
from efficientrag.setting_fields import REPLAYABLE, settings_with

# The settings a replay may change: they decide only this last step, never a hop ("best" and
# "rerank" both let every hop run, so a replay may move between them).
# What a replay of a run's traces may change: the settings that decide only which judged chunks
# are kept (the hops stay what the traces recorded).
REPLAYABLE_SETTINGS = settings_with(EfficientRAGConfig, REPLAYABLE)


@dataclass
class Judgements:
    """What the choice reads for one question, by chunk id; each dict in the order the loop first
    met its chunks.

    Attributes:
        pool: Floor and Continue chunks -> their Continue probability (a Continue chunk's best).
        floor: The question's own top ``floor_k`` first-hop hits.
        first_hits: The question's own first-hop hits in rank order, with their probability.
        judged: Every chunk the Labeler judged, at any hop -> its best Continue probability.
        by_hop: Every judged chunk -> {hop: its best Continue probability at that hop}.
        rank_by_hop: Every judged chunk -> {hop: its best rank among the hits judged at that hop}.
        best_rank: Every retrieved chunk -> its best (0-based) rank in any query's hits.
    """

    pool: dict[str, float] = field(default_factory=dict)
    floor: set[str] = field(default_factory=set)
    first_hits: list[tuple[str, float]] = field(default_factory=list)
    judged: dict[str, float] = field(default_factory=dict)
    by_hop: dict[str, dict[int, float]] = field(default_factory=dict)
    rank_by_hop: dict[str, dict[int, int]] = field(default_factory=dict)
    best_rank: dict[str, int] = field(default_factory=dict)

    def add(self, chunk_id: str, hop: int, prob: float, rank: int) -> None:
        """Record one judgement of ``chunk_id`` made at ``hop``, where it was ranked ``rank``."""
        if prob > self.judged.get(chunk_id, -1.0):
            self.judged[chunk_id] = prob
        at = self.by_hop.setdefault(chunk_id, {})
        if prob > at.get(hop, -1.0):
            at[hop] = prob
        ranks = self.rank_by_hop.setdefault(chunk_id, {})
        ranks[hop] = min(rank, ranks.get(hop, rank))


def choose_chunks(j: Judgements, cfg: EfficientRAGConfig) -> tuple[list[tuple[str, float]], int | None]:
    """The question's final chunks: the whole pool; or under a "best" budget the floor chunks and
    then the best-scored Continue chunks up to the budget, then, with ``fill_budget``, the
    question's next-ranked first-hop hits (``fill_from="first_hits"``) or the best-scored other
    judged chunks (``"labeled"``) up to the budget; or under a "rerank" budget the floor chunks and
    then the best-scored judged chunks, Continue or not. A chunk's score is its best calibrated
    Continue probability over the hops that judged it (``hop_calibration``; without it the
    probability) plus ``rank_weight / (1 + its best rank)``; ties keep the order the loop met the
    chunks in, which for the first hop is the search's order, as ``labeler_rerank`` breaks them.

    Args:
        j: The question's judgements.
        cfg: The loop's settings (``chunk_budget``, ``budget_policy``, ``fill_budget``,
            ``fill_from``, ``rank_weight``, ``hop_calibration``).

    Returns:
        ``(chunk id, probability)`` pairs in the order returned, and the number of chunks filled
        (None when the budget was already spent, so nothing was tried).
    """
    budget = cfg.chunk_budget
    score = _scorer(j, cfg)
    if budget is not None and cfg.budget_policy == "rerank":
        kept = [it for it in j.pool.items() if it[0] in j.floor]
        rest = sorted((it for it in j.judged.items() if it[0] not in j.floor), key=lambda it: -score(it))
        return kept + rest[: max(0, budget - len(kept))], None
    items = list(j.pool.items())
    if budget is None or cfg.budget_policy != "best" or len(items) <= budget:
        kept = items
    else:
        rest = sorted((it for it in items if it[0] not in j.floor), key=lambda it: -score(it))
        kept = [it for it in items if it[0] in j.floor]
        kept += rest[: max(0, budget - len(kept))]
    if not (cfg.fill_budget and budget is not None and len(kept) < budget):
        return kept, None
    have = {cid for cid, _ in kept}
    if cfg.fill_from == "labeled":
        source = sorted(j.judged.items(), key=lambda it: -score(it))
    else:
        source = j.first_hits
    fill = [it for it in source if it[0] not in have][: budget - len(kept)]
    return kept + fill, len(fill)


def _scorer(j: Judgements, cfg: EfficientRAGConfig) -> Callable[[tuple[str, float]], float]:
    """The budget's score of a ``(chunk id, probability)`` item (see :func:`choose_chunks`)."""
    weight, calibration = cfg.rank_weight, cfg.hop_calibration

    def score(item: tuple[str, float]) -> float:
        cid, prob = item
        if calibration is not None and cid in j.by_hop:
            ranks = j.rank_by_hop.get(cid, {})
            prob = max(calibrate(p, hop, calibration, ranks.get(hop, 0)) for hop, p in j.by_hop[cid].items())
        return prob + (weight / (1 + j.best_rank.get(cid, 0)) if weight else 0.0)

    return score


def judgements_from_trace(hops: Sequence[Mapping[str, Any]], *, where: str = "trace") -> Judgements:
    """A question's judgements read back from its recorded trace (``trace.hops`` of a prediction
    record), as the loop held them when it chose. Valid for a run whose loop did not stop for its
    budget (``budget_policy="best"``, or no budget).

    Args:
        hops: The trace's hops, as ``predictions.jsonl`` holds them.
        where: Where the trace was read from, for errors.

    Returns:
        The judgements.

    Raises:
        ValueError: A hit row lacks its id, score or seen flag.
    """
    j = Judgements()
    for h, hop in enumerate(hops):
        for q, rows in enumerate(hop["hits"]):
            for rank, row in enumerate(rows):
                hit = HitRecord.from_dict(row, where=f"{where}: hops[{h}].hits[{q}][{rank}]")
                j.best_rank[hit.id] = min(rank, j.best_rank.get(hit.id, rank))
                if hit.continue_prob is None:
                    continue
                p = hit.continue_prob
                if h == 0 and q == 0:
                    j.first_hits.append((hit.id, p))
                j.add(hit.id, h, p, rank)
                if hit.floor:
                    j.floor.add(hit.id)
                    j.pool[hit.id] = p
                if hit.continued:
                    j.pool[hit.id] = max(p, j.pool.get(hit.id, 0.0))
    return j
