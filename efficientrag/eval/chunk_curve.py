"""A ranked retriever's quality as a curve over its cut-off k, read at any chunk count.

An iterative retriever returns a varying number of chunks per question, so "better than Direct-R"
only means something at equal chunk count: Direct-R's curve, linearly interpolated between the
measured cut-offs, read at the iterative method's mean chunks per question.
"""

from __future__ import annotations

from collections.abc import Mapping

from efficientrag.errors import InvalidArgumentError


def value_at(curve: Mapping[float, float], k: float) -> float:
    """The curve at ``k``, linear between measured cut-offs; outside them, an error rather than an
    extrapolation nobody measured."""
    if not curve:
        raise InvalidArgumentError("empty curve")
    xs = sorted(curve)
    if k < xs[0] or k > xs[-1]:
        raise InvalidArgumentError(f"k={k:g} is outside the measured cut-offs {xs[0]:g}..{xs[-1]:g}")
    for lo, hi in zip(xs, xs[1:], strict=False):
        if lo <= k <= hi:
            if hi == lo:
                return float(curve[lo])
            w = (k - lo) / (hi - lo)
            return float(curve[lo] + w * (curve[hi] - curve[lo]))
    return float(curve[xs[0]])  # a single cut-off, k equal to it


def curve_from_ranked(retrieval: Mapping[str, Mapping[str, float]], metric: str) -> dict[float, float]:
    """``{k: metric}`` from a ranked run's ``summary["retrieval"]`` (keys are the cut-offs as strings)."""
    return {float(k): float(v[metric]) for k, v in retrieval.items() if k.isdigit()}
