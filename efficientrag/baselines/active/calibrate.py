"""DRAGIN's threshold for a model the paper did not tune: a quantile of its own RIND scores.

Why: DRAGIN's theta values (Table 9: 0.6-1.5 for Llama2-7b/13b and Vicuna-13b) are on the scale of
those models' entropies and attention. A different model has another scale: SmolLM2-135M-Instruct's
highest first-round score on HotpotQA stayed near 0.2, so with theta 1.2 DRAGIN never retrieved and
was wo-RAG under another name. The rule here sets theta from the model itself:

1. Run DRAGIN's first round (no documents yet) on *training* questions with retrieval disabled
   (theta = +inf) and keep each question's highest score, exactly the number the trigger compares
   with theta (per token for ``variant: paper``, per word for ``official``).
2. theta = the ``quantile`` of those maxima. A question then retrieves in its first round iff its
   maximum exceeds theta, so about ``1 - quantile`` of questions like these trigger at least once
   (quantile 0.5: half of them). Later rounds see documents and score differently, so the measured
   trigger rate on evaluation questions is reported next to the target, never assumed.

The result is a small JSON file (:class:`ThetaCalibration`); ``active.dragin.theta_calibration``
names it, and DRAGIN then takes its theta from the file (checked against the variant). Calibrate
on questions that are not evaluated, per model and per variant.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from efficientrag.atomic import write_text_atomic
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError, MissingFileError


@dataclass
class ThetaCalibration:
    theta: float
    quantile: float
    variant: str
    # Each calibration question's highest first-round score (the trigger's statistic); None for a
    # question whose first round generated nothing (it could not trigger).
    scores: list[float | None]
    # The generator's name, so a file is not silently reused with another model.
    generator: str = ""
    question_ids: list[str] = dataclasses.field(default_factory=list)

    @property
    def target_trigger_rate(self) -> float:
        """Share of the calibration questions whose first round would trigger at this theta."""
        if not self.scores:
            return 0.0
        return float(np.mean([s is not None and s > self.theta for s in self.scores]))

    def save(self, path: str | Path) -> Path:
        data = dataclasses.asdict(self) | {"target_trigger_rate": self.target_trigger_rate}
        write_text_atomic(path, json.dumps(data, indent=2) + "\n")
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> ThetaCalibration:
        path = Path(path)
        if not path.is_file():
            raise MissingFileError(
                f"DRAGIN theta calibration {path} not found; write it with "
                "efficientrag.baselines.active.calibrate.calibrate_theta (see docs/real_llm.md)"
            )
        data = json.loads(path.read_text(encoding="utf-8"))
        fields = {f.name for f in dataclasses.fields(cls)}
        missing = {"theta", "quantile", "variant", "scores"} - set(data)
        if missing:
            raise InvalidArgumentError(f"{path}: not a theta calibration (missing {sorted(missing)})")
        return cls(**{k: v for k, v in data.items() if k in fields})


def theta_from_scores(scores: Sequence[float | None], quantile: float) -> float:
    """The ``quantile`` (0..1) of the per-question maxima, linear interpolation (numpy's default);
    questions without a score are left out."""
    if not 0.0 <= quantile <= 1.0:
        raise InvalidArgumentError(f"quantile must lie in [0, 1], got {quantile}")
    finite = [float(s) for s in scores if s is not None and math.isfinite(s)]
    if not finite:
        raise InvalidArgumentError(
            "no finite scores to calibrate on (did every first round generate nothing?)"
        )
    return float(np.quantile(finite, quantile))


def first_round_scores(method: Any, examples: Sequence[Example], batch_size: int = 8) -> list[float | None]:
    """Each question's highest first-round DRAGIN score, with retrieval switched off.

    ``method`` is a :class:`~efficientrag.baselines.dragin.Dragin`; it is run with theta = +inf (its
    own config is left untouched), so every question ends after one round, which logs
    ``max_score``. A question that generated nothing gets None (it could not trigger)."""
    original = method.cfg
    method.cfg = dataclasses.replace(original, theta=math.inf, theta_calibration=None)
    try:
        scores: list[float | None] = []
        for start in range(0, len(examples), batch_size):
            for pred in method.run_batch(examples[start : start + batch_size]):
                steps = (pred.trace or {}).get("steps", [])
                found = [s["max_score"] for s in steps if "max_score" in s]
                scores.append(float(found[0]) if found else None)
        return scores
    finally:
        method.cfg = original


def calibrate_theta(
    method: Any, examples: Sequence[Example], quantile: float = 0.5, *, batch_size: int = 8
) -> ThetaCalibration:
    """theta = ``quantile`` of the first-round maxima on ``examples`` (training questions)."""
    scores = first_round_scores(method, examples, batch_size=batch_size)
    return ThetaCalibration(
        theta=theta_from_scores(scores, quantile),
        quantile=quantile,
        variant=method.cfg.variant,
        scores=scores,
        generator=str(getattr(method.generator, "name", "")),
        question_ids=[ex.id for ex in examples],
    )
