"""Which retrieval method ``adapt`` hands back: the loop, or its Labeler as a one-hop reranker.

On a corpus whose questions need hops the loop wins by far; on one where a single search holds the
evidence, the Labeler reranking the question's top N reaches more gold at the same chunk budget than
the loop does (HotpotQA left out, after adaptation: 89.3 / 80.0 against 83.0 / 69.3). Validation on
the source datasets cannot tell the two apart, so the choice is made on the target's own scoring
sets: the pseudo-validation chains, the single-paragraph pseudo-questions beside them, and any
``--validation`` questions. Candidates, all at the same chunk budget (the loop's ``chunk_budget``,
or its mean chunk count on the scoring sets when it has none), listed cheapest first:

- ``labeler_rerank``: one hop, the Labeler judging the question's top ``rerank_top_k`` hits, the best
  scored kept (``budget_policy="rerank"``, ``max_hops=1``: no Filter call);
- ``loop``: the configured loop;
- ``loop_rerank``: the loop that contains that reranker (``budget_policy="rerank"``, first hop of
  ``rerank_top_k``): a later hop's chunk takes a place only by outscoring a kept one;
- ``loop_rerank_calibrated``: the same with ``hop_calibration`` (per-hop Platt scaling with the
  search's rank) fitted on the scoring sets' traces. Its score is cross-fitted (two halves of the
  questions by a hash of their id, each scored with the calibration fitted on the other), so a fit
  on the very questions it is scored on never wins the choice; the calibration it ships is fitted
  on all of them.

Every candidate scores as the model choice does (``choice.combined_score``); the first of equal
scores wins. The record also says what each group of sets alone would have chosen (``by_group``:
the target's pseudo-questions against ``--validation``'s, or the source datasets' validation
questions the adaptation benchmark adds). The loop_rerank ones cost one loop run per set; their calibrations are replayed from
its traces (``pipeline.budget.choose_chunks``), no model run again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from efficientrag.adapt.choice import Judge, best_index, combined_score
from efficientrag.config_values import to_dict
from efficientrag.data.split import VALIDATION, split_of
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.pipeline.budget import choose_chunks, judgements_from_trace
from efficientrag.pipeline.calibration import fit_hop_calibration, judged_items
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import RESET_FOR_RERANKER, bounded, check_settings, settings_with

log = logging.getLogger(__name__)

Record = dict[str, Any]
LABELER_RERANK, LOOP, LOOP_RERANK, CALIBRATED = (
    "labeler_rerank",
    "loop",
    "loop_rerank",
    "loop_rerank_calibrated",
)
# The seed of the cross-fitting halves (any fixed value: it only has to differ from the splits
# that made the pseudo-validation questions).
FOLD_SEED = 7


@dataclass
class MethodChoiceConfig:
    """Attributes:
    enabled: Choose among the candidates after adapting (false: the configured loop, unscored).
    rerank_top_k: The question's hits the Labeler judges at the first hop, as a reranker does (N).
    """

    enabled: bool = True
    rerank_top_k: int = bounded(20, low=1)

    def __post_init__(self) -> None:
        check_settings(self)


def rerank_settings(loop: EfficientRAGConfig, budget: int, top_n: int) -> dict[str, EfficientRAGConfig]:
    """The reranker and the loop containing it, derived from ``loop`` at ``budget`` chunks.

    Args:
        loop: The configured loop (its models, search depth, thresholds and hops are kept).
        budget: Chunks per question.
        top_n: The question's hits judged at the first hop.
    """
    defaults = {f.name: f.default for f in fields(EfficientRAGConfig)}
    reset = {name: defaults[name] for name in settings_with(EfficientRAGConfig, RESET_FOR_RERANKER)}
    contained = replace(
        loop,
        **reset,
        budget_policy="rerank",
        chunk_budget=max(budget, 1),
        first_top_k=max(top_n, loop.top_k),
    )
    return {LABELER_RERANK: replace(contained, max_hops=1), LOOP_RERANK: contained}


def replay(records: Sequence[Record], cfg: EfficientRAGConfig) -> list[Record]:
    """``records`` with the chunks ``cfg``'s budget would have kept from their traces."""
    out = []
    for r in records:
        kept = choose_chunks(judgements_from_trace(r["trace"]["hops"], where=str(r.get("id"))), cfg)[0]
        out.append({**r, "retrieved_ids": [cid for cid, _ in kept]})
    return out


def summarize(records: Sequence[Record]) -> dict[str, float]:
    """Recall and all-gold (percent), chunks and Labeler pairs per question, as the runner's summary."""
    n = max(1, len(records))
    scores = question_scores(records)
    return {
        "n": float(len(records)),
        "recall": round(mean([r for r, _ in scores]), 4),
        "all_gold": round(mean([g for _, g in scores]), 4),
        "num_chunks": round(sum(len(r["retrieved_ids"]) for r in records) / n, 4),
        "labeler_pairs": round(sum(r.get("counters", {}).get("labeler_pairs", 0.0) for r in records) / n, 2),
    }


def fit_calibration(records: Sequence[Record], max_hops: int) -> list[list[float]]:
    """Per-hop Platt scaling with the search's rank, fitted on the loop's traces and their gold."""
    judged = []
    for r in records:
        j = judgements_from_trace(r["trace"]["hops"], where=str(r.get("id")))
        judged += judged_items(j.by_hop, r["gold_chunk_ids"], j.rank_by_hop)
    return fit_hop_calibration(judged, max_hops=max_hops, with_rank=True)


def cross_fitted(
    runs: Mapping[str, Sequence[Record]], cfg: EfficientRAGConfig
) -> tuple[dict[str, list[Record]], list[list[float]]]:
    """Each question replayed under a calibration fitted on the other half of the questions (all
    sets pooled), and the calibration fitted on all of them.

    Raises:
        ValueError: A half has too few judgements to fit (``fit_hop_calibration``).
    """

    def half(r: Record) -> bool:
        return split_of(str(r["id"]), validation_ratio=0.5, seed=FOLD_SEED) == VALIDATION

    pooled = [r for rs in runs.values() for r in rs]
    fits = {
        side: fit_calibration([r for r in pooled if half(r) != side], cfg.max_hops) for side in (True, False)
    }
    out = {
        name: [replay([r], replace(cfg, hop_calibration=fits[half(r)]))[0] for r in rs]
        for name, rs in runs.items()
    }
    return out, fit_calibration(pooled, cfg.max_hops)


def choose_method(
    judge: Judge, models: Mapping[str, Any], loop: EfficientRAGConfig, cfg: MethodChoiceConfig
) -> tuple[EfficientRAGConfig, dict[str, Any]]:
    """Score every candidate on ``judge``'s sets with ``models``; the best one's settings.

    Args:
        judge: The scoring sets (the same ones the models were chosen on).
        models: ``{"labeler": folder, "filter": folder}``, the models adapt hands back.
        loop: The configured loop.
        cfg: The choice's settings.

    Returns:
        The chosen settings (with the models' folders) and a record of every candidate.
    """
    loop = replace(loop, labeler=str(models["labeler"]), filter=str(models["filter"]))
    groups = {s.name: s.group for s in judge.sets}
    runs = {LOOP: judge.records(models, loop)}
    budget = loop.chunk_budget or max(1, round(summarize(_all(runs[LOOP]))["num_chunks"]))
    settings = {LOOP: loop} | rerank_settings(loop, budget, cfg.rerank_top_k)
    runs[LABELER_RERANK] = judge.records(models, settings[LABELER_RERANK])
    runs[LOOP_RERANK] = judge.records(models, settings[LOOP_RERANK])
    notes: dict[str, str] = {}
    try:
        runs[CALIBRATED], calibration = cross_fitted(runs[LOOP_RERANK], settings[LOOP_RERANK])
        settings[CALIBRATED] = replace(settings[LOOP_RERANK], hop_calibration=calibration)
    except ValueError as e:
        notes[CALIBRATED] = f"not a candidate: {e}"
    order = [n for n in (LABELER_RERANK, LOOP, LOOP_RERANK, CALIBRATED) if n in runs]
    candidates: dict[str, Any] = {}
    for name in order:
        per_set = {s: summarize(rs) for s, rs in runs[name].items()}
        candidates[name] = {
            "score": round(combined_score(per_set, groups), 2),
            "sets": per_set,
            "efficientrag": to_dict(settings[name]),
        }
    chosen = order[best_index([candidates[n]["score"] for n in order])]
    by_group = {
        g: order[best_index([combined_score(_only(candidates[n]["sets"], groups, g), groups) for n in order])]
        for g in sorted(set(groups.values()))
    }
    log.info("method chosen: %s (%s)", chosen, ", ".join(f"{n} {candidates[n]['score']:.2f}" for n in order))
    record = {
        "chosen": chosen,
        "chunk_budget": budget,
        "rerank_top_k": cfg.rerank_top_k,
        "candidates": candidates,
        "groups": groups,
        "by_group": by_group,
        **({"notes": notes} if notes else {}),
    }
    return settings[chosen], record


def _only(per_set: Mapping[str, Any], groups: Mapping[str, str], group: str) -> dict[str, Any]:
    return {name: r for name, r in per_set.items() if groups[name] == group}


def _all(runs: Mapping[str, Sequence[Record]]) -> list[Record]:
    return [r for rs in runs.values() for r in rs]
