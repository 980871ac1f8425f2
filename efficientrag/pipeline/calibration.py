"""One scale for Continue probabilities judged at different hops.

The first hop's Labeler reads (question, chunk); a later hop's reads (the Filter's query, chunk). The
same 0.6 need not mean the same chance of gold at both, yet the chunk budget compares them when a
later hop's chunk competes for a place with a first-hop one (``budget_policy="rerank"``). Platt
scaling per hop maps each probability to an estimate of that chance: ``sigmoid(a * logit(p) + b)``,
with ``a > 0`` so that a hop's own order never changes and the first hop stays exactly the Labeler's
ranking of the question's hits. A third coefficient ``c`` adds ``c * log(1 + rank)``, the chunk's
rank in the hits of the query that judged it: the search's order beside the Labeler's, as a
deployed reranker is fused with its search (with it the first hop is that fused ranking, not the
Labeler's alone). The coefficients are fitted on validation traces (``fit_hop_calibration``);
``calibration_error`` says how far each hop's scores are from the gold rate they claim.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from efficientrag.errors import InvalidArgumentError

_EPS = 1e-6
# A hop's pair is fitted only from this many judgements with both classes present (at least
# MIN_EACH of each); deeper hops with fewer share the pair of the hops before them.
MIN_JUDGEMENTS = 50
MIN_EACH = 5
# The smallest slope a fit may give: a hop whose probabilities carry no sign of gold gets (nearly) its
# base rate for every chunk, still ordered as the Labeler ordered them.
MIN_SLOPE = 1e-3
# The fit's pull towards the probability itself (a = 1, b = 0), in units of one judgement's
# log-likelihood: enough to keep a separable hop finite, too little to matter with hundreds of them.
RIDGE = 1.0


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


def calibrate(prob: float, hop: int, calibration: Sequence[Sequence[float]], rank: int = 0) -> float:
    """A probability judged at ``hop`` on the common scale.

    Args:
        prob: The Labeler's Continue probability.
        hop: The hop it was judged at (0: the question's own search).
        calibration: Per hop ``[a, b]`` or ``[a, b, c]``; the last entry serves every deeper hop.
        rank: The chunk's (0-based) rank in the hits of the query that judged it.

    Returns:
        ``sigmoid(a * logit(prob) + b + c * log(1 + rank))``.
    """
    a, b, *rest = calibration[min(hop, len(calibration) - 1)]
    z = a * _logit(prob) + b + (rest[0] * math.log1p(rank) if rest else 0.0)
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class Judged:
    """One chunk's best Continue probability at one hop of one question, its best rank in that hop's
    hits, and whether it is gold."""

    hop: int
    prob: float
    gold: bool
    rank: int = 0


def judged_items(
    by_hop: Mapping[str, Mapping[int, float]],
    gold_ids: Iterable[str],
    rank_by_hop: Mapping[str, Mapping[int, int]] | None = None,
) -> list[Judged]:
    """One question's judgements with their gold flags.

    Args:
        by_hop: Each judged chunk -> {hop: its best Continue probability there} (``Judgements.by_hop``
            of the loop, or of :func:`efficientrag.pipeline.budget.judgements_from_trace`).
        gold_ids: The question's gold chunk ids.
        rank_by_hop: Each judged chunk -> {hop: its best rank among the hits judged there}
            (``Judgements.rank_by_hop``; None: rank 0 everywhere).

    Returns:
        One item per chunk and hop that judged it.
    """
    gold, ranks = set(gold_ids), rank_by_hop or {}
    return [
        Judged(h, p, cid in gold, ranks.get(cid, {}).get(h, 0))
        for cid, at in by_hop.items()
        for h, p in at.items()
    ]


def fit_hop_calibration(
    judged: Sequence[Judged], *, max_hops: int = 4, with_rank: bool = False
) -> list[list[float]]:
    """Platt scaling per hop, fitted by maximum likelihood (Newton's method, a light ridge towards
    the identity).

    Args:
        judged: Validation judgements (:func:`judged_items`).
        max_hops: Entries at most; judgements at deeper hops count for the last one.
        with_rank: Fit ``c`` too (the search's rank beside the probability).

    Returns:
        ``[[a, b], ...]`` (``[[a, b, c], ...]`` with ``with_rank``), one entry per hop with enough
        judgements (``MIN_JUDGEMENTS``, ``MIN_EACH`` of each class), at least the first; ``a`` at
        least ``MIN_SLOPE``.

    Raises:
        ValueError: The first hop has too few judgements, or only one class.
    """
    groups: dict[int, list[Judged]] = {}
    for item in judged:
        groups.setdefault(min(item.hop, max_hops - 1), []).append(item)
    pairs: list[list[float]] = []
    for hop in range(max_hops):
        items = groups.get(hop, [])
        positives = sum(i.gold for i in items)
        if len(items) < MIN_JUDGEMENTS or min(positives, len(items) - positives) < MIN_EACH:
            if hop == 0:
                raise InvalidArgumentError(
                    f"calibration: the first hop has {len(items)} judgements ({positives} gold); it needs "
                    f"{MIN_JUDGEMENTS} with at least {MIN_EACH} gold and {MIN_EACH} not"
                )
            break
        features = [[_logit(i.prob), *([math.log1p(i.rank)] if with_rank else [])] for i in items]
        pairs.append(_platt(features, [float(i.gold) for i in items]))
    return pairs


def _platt(
    x: Sequence[Sequence[float]], y: Sequence[float], ridge: float = RIDGE, steps: int = 100
) -> list[float]:
    """``[a, b, *c]`` maximizing the likelihood of ``y`` under ``sigmoid(a * x0 + b + c . x1..)``,
    less ``ridge / 2`` times the squared distance to ``[1, 0, 0..]``: where a threshold separates
    the classes (a Labeler that never says below 0.1 for a gold chunk) the likelihood alone grows
    without bound with ``a``; the ridge keeps the fit finite and pulls a thin hop towards the
    probability itself. Newton's method, each step halved until the objective falls."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    design = np.column_stack([xs[:, 0], np.ones(len(xs)), xs[:, 1:]])
    prior = np.zeros(design.shape[1])
    prior[0] = 1.0

    def objective(w: np.ndarray) -> float:
        z = design @ w
        # -log likelihood: log(1 + e^z) - y z, computed without overflow.
        return float(np.sum(np.logaddexp(0.0, z) - ys * z) + ridge / 2 * np.sum((w - prior) ** 2))

    w = prior.copy()
    current = objective(w)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ w, -500, 500)))
        grad = design.T @ (p - ys) + ridge * (w - prior)
        hess = design.T @ (design * (p * (1 - p))[:, None]) + ridge * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        while scale > 1e-8 and objective(w - scale * step) > current:
            scale /= 2
        w = w - scale * step
        new = objective(w)
        done = current - new < 1e-10 * max(1.0, abs(current))
        current = new
        if done:
            break
    return [round(max(float(w[0]), MIN_SLOPE), 6), *(round(float(v), 6) for v in w[1:])]


def calibration_error(
    judged: Sequence[Judged], calibration: Sequence[Sequence[float]] | None, *, bins: int = 10
) -> dict[int, dict[str, float]]:
    """Each hop's expected calibration error: how far its scores are from the gold rate they claim.

    Args:
        judged: Judgements with gold flags (:func:`judged_items`).
        calibration: The pairs to score with (None: the raw probabilities).
        bins: Equal-width score bins.

    Returns:
        ``{hop: {"n", "gold_rate", "mean_score", "ece"}}``; rates and scores in [0, 1].
    """
    by_hop: dict[int, list[tuple[float, bool]]] = {}
    for item in judged:
        score = item.prob if calibration is None else calibrate(item.prob, item.hop, calibration, item.rank)
        by_hop.setdefault(item.hop, []).append((score, item.gold))
    out = {}
    for hop, rows in sorted(by_hop.items()):
        filled: dict[int, list[tuple[float, bool]]] = {}
        for score, gold in rows:
            filled.setdefault(min(int(score * bins), bins - 1), []).append((score, gold))
        ece = sum(
            len(cell) * abs(sum(s for s, _ in cell) / len(cell) - sum(g for _, g in cell) / len(cell))
            for cell in filled.values()
        ) / len(rows)
        out[hop] = {
            "n": float(len(rows)),
            "gold_rate": sum(g for _, g in rows) / len(rows),
            "mean_score": sum(s for s, _ in rows) / len(rows),
            "ece": ece,
        }
    return out
