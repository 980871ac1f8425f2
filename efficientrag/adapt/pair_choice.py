"""How many Labeler pairs a question of the chosen method judges, chosen with cost in the objective.

The loop's price over a one-hop reranker is its pairs: every later-hop query has its ``top_k`` hits
judged, and most of them end outside the budget. Once ``adapt`` has chosen the method, the
candidates judge fewer: the later hops' width (``top_k`` below the chosen one, the first hop kept at
its hits through ``first_top_k``) or a cap on a question's pairs (``pair_budget``, the first hop's
included). Each runs on the scoring sets the method was chosen on, and the rule fixed before any run
picks one: of the candidates whose score is within ``tolerance`` points of the best candidate's
(the chosen method as it is among them), the one with the fewest Labeler pairs a question; the
higher score, then the earlier listed, on a tie. A one-hop method has nothing to choose: its pairs
are its N. ``benchmarks/pair_cost.py`` applies the same rule to the toy worlds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from efficientrag.adapt.choice import Judge, combined_score
from efficientrag.adapt.method_choice import summarize
from efficientrag.config_values import to_dict
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import SettingError, bounded, check_settings

log = logging.getLogger(__name__)

AS_CHOSEN = "as chosen"


@dataclass
class PairChoiceConfig:
    """Attributes:
    enabled: Choose the chosen method's later hops' width and pair cap on the scoring sets (false:
        it judges what it is configured to).
    widths: Candidate ``top_k`` of the later hops; those not below the method's own are skipped.
    budgets: Candidate ``pair_budget``; those below the first hop's pairs are skipped.
    tolerance: Score points a candidate may cost against the best one.
    """

    enabled: bool = False
    widths: list[int] = field(default_factory=lambda: [6, 4])
    budgets: list[int] = field(default_factory=lambda: [30, 25])
    tolerance: float = bounded(1.0, low=0.0)

    def __post_init__(self) -> None:
        check_settings(self)
        for name in ("widths", "budgets"):
            values = getattr(self, name)
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
                raise SettingError(f"{name} must be whole numbers >= 1, got {values!r}", fields=(name,))


def pair_candidates(chosen: EfficientRAGConfig, cfg: PairChoiceConfig) -> dict[str, EfficientRAGConfig]:
    """The chosen settings and every candidate that judges fewer pairs, cheapest kind last.

    Args:
        chosen: The chosen method's settings.
        cfg: The choice's settings.
    """
    out = {AS_CHOSEN: chosen}
    if chosen.max_hops == 1:
        return out
    if chosen.first_hop_reranker is None:  # with a cross-encoder first, top_k is the first hop's too
        for width in sorted(set(cfg.widths), reverse=True):
            if width < chosen.top_k:
                out[f"later hops top {width}"] = replace(chosen, first_top_k=chosen.first_hop_k, top_k=width)
    for budget in sorted(set(cfg.budgets), reverse=True):
        if budget >= chosen.first_hop_judged and (chosen.pair_budget is None or budget < chosen.pair_budget):
            out[f"pair budget {budget}"] = replace(chosen, pair_budget=budget)
    return out


def pick_fewest_pairs(rows: Mapping[str, Mapping[str, float]], tolerance: float) -> str:
    """Of the candidates whose ``score`` is within ``tolerance`` of the best, the one with the fewest
    ``pairs`` (then the higher score, then the first listed).

    Args:
        rows: Candidate name -> ``{"score", "pairs"}``, in the order they were listed.
        tolerance: Score points a candidate may cost.
    """
    names = list(rows)
    floor = max(r["score"] for r in rows.values()) - tolerance
    within = [n for n in names if rows[n]["score"] >= floor]
    return min(within, key=lambda n: (rows[n]["pairs"], -rows[n]["score"], names.index(n)))


def choose_pairs(
    judge: Judge, models: Mapping[str, Path], chosen: EfficientRAGConfig, cfg: PairChoiceConfig
) -> tuple[EfficientRAGConfig, dict[str, Any]]:
    """Score every candidate of :func:`pair_candidates` on ``judge``'s sets; the rule's pick.

    Args:
        judge: The scoring sets the method was chosen on.
        models: ``{"labeler": folder, "filter": folder}``.
        chosen: The chosen method's settings.
        cfg: The choice's settings.

    Returns:
        The picked candidate's settings and a record of every candidate (score, Labeler pairs and
        chunks a question, its settings).
    """
    candidates = pair_candidates(chosen, cfg)
    if len(candidates) == 1:
        why = "a one-hop method judges its N pairs" if chosen.max_hops == 1 else "no candidate judges fewer"
        return chosen, {"chosen": AS_CHOSEN, "why": why}
    groups = {s.name: s.group for s in judge.sets}
    rows: dict[str, dict[str, Any]] = {}
    for name, settings in candidates.items():
        runs = judge.records(models, settings)
        pooled = summarize([r for recs in runs.values() for r in recs])
        rows[name] = {
            "score": round(combined_score({s: summarize(recs) for s, recs in runs.items()}, groups), 2),
            "pairs": pooled["labeler_pairs"],
            "chunks": pooled["num_chunks"],
            "efficientrag": to_dict(settings),
        }
    pick = pick_fewest_pairs(rows, cfg.tolerance)
    scores = ", ".join(f"{n}: {r['score']} at {r['pairs']} pairs" for n, r in rows.items())
    log.info("pairs chosen: %s (%s)", pick, scores)
    return candidates[pick], {"chosen": pick, "tolerance": cfg.tolerance, "candidates": rows}
