"""Which models to keep: adapted candidates and the given models scored on questions with gold.

Fine-tuning on adaptation rows can make models worse (self-training rows that were all Terminate
once lowered recall 65.42 -> 60.00), and the best mix ratio depends on the corpus, so every
candidate is scored, and the given models too, before anything is reported as the result.

Scoring sets come in two groups: ``pseudo``, the pseudo-validation questions mined from the target
corpus (held-out chains, their paragraphs as gold, and each chain's last paragraph asked alone), and
``validation``, questions with real gold (``--validation`` over the target corpus; the adaptation
benchmark adds the training files' own validation questions over their corpora). A set scores (recall + all-gold) / 2 (oracle-chunk
recall and the all-gold rate, in percent, of the evaluation runner) with the loop's setting; a
group the mean of its sets; the score the mean of the groups present. The adaptation benchmark
chooses its candidates by the same score.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.experiment.run_binding import loop_fingerprint
from efficientrag.fingerprint import file_digest, json_digest
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.base import Retriever

log = logging.getLogger(__name__)

PSEUDO_GROUP = "pseudo"
VALIDATION_GROUP = "validation"
GROUPS = (PSEUDO_GROUP, VALIDATION_GROUP)
KEPT_METRICS = ("n", "recall", "all_gold", "num_chunks")


@dataclass
class ScoringSet:
    """Questions with gold chunk ids, and the retriever over the corpus those ids point into."""

    name: str
    group: str
    retriever: Retriever
    examples: list[Example]

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise InvalidArgumentError(
                f"scoring set {self.name!r}: group must be one of {GROUPS}, got {self.group!r}"
            )
        if not self.examples:
            raise InvalidArgumentError(f"scoring set {self.name!r} has no question")


@dataclass
class Scores:
    """One model pair's numbers on every scoring set."""

    labeler: Path
    filter: Path
    sets: dict[str, dict[str, float]] = field(default_factory=dict)
    score: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "labeler": str(self.labeler),
            "filter": str(self.filter),
            "score": round(self.score, 2),
            "sets": self.sets,
            "seconds": round(self.seconds, 1),
        }


def combined_score(per_set: dict[str, dict[str, float]], groups: dict[str, str]) -> float:
    """The mean over groups of the mean over their sets of (recall + all-gold) / 2.

    Args:
        per_set: each set's retrieval summary (``recall`` and ``all_gold`` in percent).
        groups: each set's group (``pseudo`` or ``validation``).
    """
    by_group: dict[str, list[float]] = {}
    for name, r in per_set.items():
        by_group.setdefault(groups[name], []).append((r["recall"] + r["all_gold"]) / 2)
    if not by_group:
        raise InvalidArgumentError("no scoring set: nothing to score the models on")
    return sum(sum(v) / len(v) for v in by_group.values()) / len(by_group)


def best_index(scores: Sequence[float]) -> int:
    """The highest score's position; the first of equal ones (candidates are listed cheapest first)."""
    if not scores:
        raise InvalidArgumentError("no candidate to choose from")
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


class Judge:
    """Scores model pairs on the scoring sets, each pair once (by its weights' digest); the
    evaluations are run folders under ``out_dir``, so a rerun reuses them."""

    def __init__(
        self,
        sets: Sequence[ScoringSet],
        loop: EfficientRAGConfig,
        out_dir: str | Path,
        *,
        batch_size: int = 32,
        progress: bool = True,
    ) -> None:
        names = [s.name for s in sets]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"scoring sets need distinct names, got {names}")
        self.sets = list(sets)
        self.loop = loop
        self.out_dir = Path(out_dir)
        self.batch_size = batch_size
        self.progress = progress
        self._done: dict[str, Scores] = {}

    def __bool__(self) -> bool:
        return bool(self.sets)

    def describe(self) -> dict[str, dict[str, Any]]:
        return {s.name: {"group": s.group, "questions": len(s.examples)} for s in self.sets}

    def score(self, models: dict[str, Path]) -> Scores:
        """``models``: ``{"labeler": folder, "filter": folder}``, run with the judge's loop."""
        key = _digest(models)
        if key in self._done:
            return self._done[key]
        t0 = time.perf_counter()
        out = Scores(Path(models["labeler"]), Path(models["filter"]))
        for s in self.sets:
            whole = self._evaluate(models, self.loop, s)["retrieval"]["all"]
            out.sets[s.name] = {
                "n": int(whole["n"]),
                **{k: round(float(whole[k]), 4) for k in KEPT_METRICS[1:]},
            }
        out.score = combined_score(out.sets, {s.name: s.group for s in self.sets})
        out.seconds = time.perf_counter() - t0
        log.info("scored %s: %.2f %s", models["labeler"], out.score, out.sets)
        self._done[key] = out
        return out

    def records(self, models: dict[str, Path], loop: EfficientRAGConfig) -> dict[str, list[dict[str, Any]]]:
        """Each set's prediction records (with traces) of ``models`` run with ``loop``'s settings.

        Args:
            models: ``{"labeler": folder, "filter": folder}``.
            loop: The loop's settings (its model folders are replaced by ``models``).
        """
        out = {}
        for s in self.sets:
            self._evaluate(models, loop, s)
            out[s.name] = list(read_jsonl(self.run_dir(models, loop, s.name) / "predictions.jsonl"))
        return out

    def run_dir(self, models: dict[str, Path], loop: EfficientRAGConfig, set_name: str) -> Path:
        """Where ``models`` run with ``loop`` on one set are evaluated: keyed by the weights' digest
        and the loop's settings, so a rerun reuses it and other settings never do."""
        return (
            self.out_dir
            / _digest(models)[:12]
            / json_digest(loop_fingerprint(loop, answers=False, model_digests=True), 8)
            / set_name
        )

    def _evaluate(self, models: dict[str, Path], loop: EfficientRAGConfig, s: ScoringSet) -> dict[str, Any]:
        from efficientrag.eval.job_runs import evaluate_efficientrag_run

        # The evaluation the benchmark and the quickstart run: the same records, metrics and resume
        # (eval.job_runs; the summary's dataset and split keys are the ones it has always written).
        out = self.run_dir(models, loop, s.name)
        rag = replace(loop, labeler=str(models["labeler"]), filter=str(models["filter"]))
        summary = evaluate_efficientrag_run(
            rag,
            s.retriever,
            s.examples,
            out,
            batch_size=self.batch_size,
            progress=self.progress,
            meta={"dataset": s.name, "split": "held-out"},
        )
        if "retrieval" not in summary:
            raise InvalidArgumentError(
                f"scoring {models['labeler']} on {s.name}: every question failed; see {out / 'errors.jsonl'}"
            )
        return summary


def _digest(models: dict[str, Path]) -> str:
    return file_digest([Path(models[k]) / "model.safetensors" for k in ("labeler", "filter")])
