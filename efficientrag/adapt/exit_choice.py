"""Which ``exit_threshold`` ``adapt`` hands back: the Labeler's early exit, chosen with cost in the
objective.

A new corpus needs its own threshold, as it needs its own calibration: how many pairs may leave the
Labeler early without a kept chunk going with them depends on the corpus and on the method chosen
for it. Once the method is chosen, the kept Labeler's exit heads are fit on its own training rows
and on the pairs the method judges for half of the scoring questions
(:mod:`efficientrag.training.exit_head`: its later hops read the Filter's queries, which no
training row holds, and a head must see what it will judge; no gold is read), the chosen settings
run at every candidate threshold, and on the other half of the questions the rule fixed before any
run picks one: of the thresholds whose score is within ``tolerance`` points of full depth, the one
that runs the fewest encoder layers a question; full depth when none is. ``benchmarks/early_exit.py``
applies the same rule to the toy worlds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from efficientrag.adapt.choice import Judge, combined_score
from efficientrag.adapt.method_choice import FOLD_SEED, summarize
from efficientrag.data.split import VALIDATION, split_of
from efficientrag.eval.record_scores import mean
from efficientrag.jsonl import write_jsonl
from efficientrag.models.early_exit import encoder_depth
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import SettingError, bounded, check_settings
from efficientrag.text.words import split_words
from efficientrag.training.exit_head import ExitHeadConfig, ensure_exit_heads, rows_from_traces

log = logging.getLogger(__name__)

Record = dict[str, Any]


@dataclass
class ExitChoiceConfig:
    """Attributes:
    enabled: Fit exit heads for the kept Labeler and choose ``exit_threshold`` on the scoring sets
        (false: every pair is judged in full, as before).
    thresholds: The candidate thresholds, each in (0, 1].
    tolerance: Score points a threshold may cost against full depth.
    heads: How the heads are fit.
    """

    enabled: bool = False
    thresholds: list[float] = field(default_factory=lambda: [0.01, 0.02, 0.05, 0.1, 0.2, 0.3])
    tolerance: float = bounded(1.0, low=0.0)
    heads: ExitHeadConfig = field(default_factory=ExitHeadConfig)

    def __post_init__(self) -> None:
        check_settings(self)
        if not self.thresholds or not all(0.0 < float(t) <= 1.0 for t in self.thresholds):
            raise SettingError(
                f"thresholds must be numbers in (0, 1], got {self.thresholds!r}", fields=("thresholds",)
            )


def layer_cost(records: Sequence[Record], depth: int) -> float:
    """Encoder layers run per question: a pair judged in full runs ``depth``, one that left early
    the layers up to its exit (read from the traces).

    Args:
        records: Prediction records with their traces.
        depth: The Labeler's encoder layers.
    """
    return mean(
        [
            sum(
                row.get("exited_at") or depth
                for hop in r["trace"]["hops"]
                for hits in hop["hits"]
                for row in hits
                if "tag" in row
            )
            for r in records
        ]
    )


def pick_threshold(rows: Mapping[float | None, Mapping[str, float]], tolerance: float) -> float | None:
    """Of the thresholds whose ``score`` is within ``tolerance`` of full depth (``rows[None]``), the
    one that runs the fewest ``layers`` (the higher threshold on a tie); None (full depth) when none is.

    Args:
        rows: Threshold (None: full depth) -> ``{"score", "layers"}``.
        tolerance: Score points a threshold may cost.
    """
    floor = rows[None]["score"] - tolerance
    within = [t for t in rows if t is not None and rows[t]["score"] >= floor]
    return min(within, key=lambda t: (rows[t]["layers"], -t)) if within else None


def choose_exit(
    judge: Judge,
    models: Mapping[str, Path],
    chosen: EfficientRAGConfig,
    rows: Path,
    cfg: ExitChoiceConfig,
    work: Path,
) -> tuple[EfficientRAGConfig, dict[str, Any]]:
    """Fit the Labeler's exit heads and pick ``chosen``'s threshold on ``judge``'s sets.

    The heads are fit on ``rows`` and on the pairs the full-depth method judges for one half of
    the scoring questions (split by a hash of their id; no gold is read); the thresholds are scored
    on the other half, so the heads are measured on questions whose pairs they never saw, and the
    heads shipped are the ones measured.

    Args:
        judge: The scoring sets the method was chosen on.
        models: ``{"labeler": folder, "filter": folder}`` (the heads are written beside the Labeler).
        chosen: The chosen method's settings.
        rows: The Labeler's training rows (a ``train.jsonl``).
        cfg: The choice's settings.
        work: Where the loop's pairs are written for the fit.

    Returns:
        ``chosen`` with its ``exit_threshold`` (None: full depth), and a record of every candidate.
    """
    fit = fit_method_heads(judge, models, chosen, rows, cfg.heads, work)
    threshold, scored = score_thresholds(judge, models, chosen, cfg.thresholds, cfg.tolerance)
    record = {
        "chosen": threshold,
        "tolerance": cfg.tolerance,
        "candidates": {str(t): v for t, v in scored.items()},
        "heads": {"layers": cfg.heads.layers, "rows": fit.get("rows"), "rows_digest": fit.get("rows_digest")},
    }
    return replace(chosen, exit_threshold=threshold), record


def fit_method_heads(
    judge: Judge,
    models: Mapping[str, Path],
    method: EfficientRAGConfig,
    rows: Path,
    heads: ExitHeadConfig,
    work: Path,
) -> dict[str, Any]:
    """Fit the Labeler's exit heads (unless those beside it already are) on ``rows`` and on the
    pairs the full-depth ``method`` judges for the fit half of ``judge``'s questions; returns the
    fit record. Any method sharing this Labeler may then score thresholds on the other half.

    Args:
        judge: The scoring sets.
        models: ``{"labeler": folder, "filter": folder}`` (the heads are written beside the Labeler).
        method: The settings whose pairs the heads also see (the chosen method's).
        rows: The Labeler's training rows (a ``train.jsonl``).
        heads: How the heads are fit.
        work: Where the method's pairs are written for the fit.
    """
    full = judge.records(models, replace(method, exit_threshold=None))
    pairs = work / "loop_pairs.jsonl"
    write_jsonl(pairs, [row.to_dict() for row in _fit_half_pairs(judge, full)])
    return ensure_exit_heads(Path(models["labeler"]), [rows, pairs], heads, show_progress=judge.progress)


def score_thresholds(
    judge: Judge,
    models: Mapping[str, Path],
    method: EfficientRAGConfig,
    thresholds: Sequence[float],
    tolerance: float,
) -> tuple[float | None, dict[float | None, dict[str, float]]]:
    """``method`` at full depth and at each threshold, scored on the half of ``judge``'s questions
    the heads were not fit on, and the threshold :func:`pick_threshold` takes.

    Args:
        judge: The scoring sets.
        models: ``{"labeler": folder, "filter": folder}``, the Labeler's heads already fit.
        method: The settings to run.
        thresholds: The candidates, each in (0, 1].
        tolerance: Score points a threshold may cost against full depth.

    Returns:
        The pick (None: full depth) and each candidate's ``{"score", "layers"}``.
    """
    depth = encoder_depth(Path(models["labeler"]))
    groups = {s.name: s.group for s in judge.sets}
    scored: dict[float | None, dict[str, float]] = {}
    for t in [None, *sorted({float(x) for x in thresholds})]:
        runs = judge.records(models, replace(method, exit_threshold=t))
        held = {name: [r for r in recs if not _fit_half(r)] for name, recs in runs.items()}
        per_set = {name: summarize(recs) for name, recs in held.items() if recs}
        pooled = [r for recs in held.values() for r in recs]
        scored[t] = {
            "score": round(combined_score(per_set, groups), 2),
            "layers": round(layer_cost(pooled, depth), 1),
        }
    threshold = pick_threshold(scored, tolerance)
    log.info("exit threshold chosen: %s (%s)", threshold, ", ".join(f"{t}: {v}" for t, v in scored.items()))
    return threshold, scored


def _fit_half(record: Record) -> bool:
    """The half of the scoring questions whose pairs the heads are fit on."""
    return split_of(str(record["id"]), validation_ratio=0.5, seed=FOLD_SEED) == VALIDATION


def _fit_half_pairs(judge: Judge, full: Mapping[str, Sequence[Record]]) -> list[Any]:
    """The full-depth pairs of the fit half's questions, from every set whose search keeps its corpus."""
    out = []
    for s in judge.sets:
        corpus = getattr(s.retriever, "corpus", None)
        if corpus is None:
            continue
        records = [r for r in full[s.name] if _fit_half(r)]
        out += rows_from_traces(records, lambda cid, c=corpus: split_words(c.get(cid).contents))
    return out
