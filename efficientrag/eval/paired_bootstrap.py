"""How sure a gap between two methods on the same questions is: a paired bootstrap.

Two methods scored on the same dev questions differ by a mean; with 70 or 350 questions a gap of
a point or two can be a handful of questions. Resampling the questions (with replacement, the same
draw for both methods, so each question's pair stays together) gives the spread of that mean: its
percentile interval, and the share of resamples in which the first method is at or above the
second. Nothing here is chosen on the result: the seed and the number of resamples are arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from efficientrag.errors import InvalidArgumentError

# A resampled mean this close to 0 counts as 0: summing the same differences in another order
# leaves a rounding residue of about 1e-16, which must not decide "at or above".
_ZERO = 1e-12


@dataclass(frozen=True)
class PairedGap:
    """The mean of ``a - b`` over the questions, with its bootstrap interval.

    Args:
        mean: The observed mean difference (on the questions as they are, not resampled).
        low: The interval's lower end (the ``(1 - confidence) / 2`` percentile of resampled means).
        high: Its upper end.
        at_or_above: The share of resamples whose mean difference is at or above 0.
        n: The number of questions.
        resamples: The number of resamples drawn.
        confidence: The interval's nominal coverage (0.95 for a 95% interval).
    """

    mean: float
    low: float
    high: float
    at_or_above: float
    n: int
    resamples: int
    confidence: float

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (the gap's sign is not noise)."""
        return self.low > 0 or self.high < 0

    @property
    def verdict(self) -> str:
        """``"above"`` or ``"below"`` where the interval excludes 0, else ``"tie"``."""
        return "above" if self.low > 0 else "below" if self.high < 0 else "tie"

    def cell(self) -> str:
        """The gap as a table shows it: ``+1.2 [-0.3, +2.8] tie``."""
        return f"{self.mean:+.1f} [{self.low:+.1f}, {self.high:+.1f}] {self.verdict}"


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedGap:
    """The mean of ``a[i] - b[i]`` and its percentile interval over ``resamples`` question draws.

    Args:
        a: One score per question for the first method (e.g. recall, or 1.0 / 0.0 for all-gold).
        b: The second method's scores for the same questions, in the same order.
        resamples: How many resamples of the questions to draw.
        confidence: The interval's nominal coverage, in (0, 1).
        seed: The generator's seed, so a report can be reproduced to the digit.

    Raises:
        ValueError: Unequal lengths, no questions, a score that is not finite, fewer than one
            resample or a confidence outside (0, 1).
    """
    if len(a) != len(b):
        raise InvalidArgumentError(
            f"paired_bootstrap: {len(a)} scores against {len(b)}; pair each question once"
        )
    if len(a) == 0:  # a NumPy array has no truth value
        raise InvalidArgumentError("paired_bootstrap: no questions to compare")
    if resamples < 1:
        raise InvalidArgumentError(f"paired_bootstrap: resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"paired_bootstrap: confidence must be in (0, 1), got {confidence}")
    diffs = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(diffs)):
        raise InvalidArgumentError("paired_bootstrap: a score is not a finite number")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[draws].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return PairedGap(
        mean=float(diffs.mean()),
        low=float(low),
        high=float(high),
        at_or_above=float(np.mean(means >= -_ZERO)),
        n=len(diffs),
        resamples=resamples,
        confidence=confidence,
    )
