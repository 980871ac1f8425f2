"""The fine-tuning set: the original training rows plus a share of adaptation rows.

Fine-tuning on adaptation rows alone would let the models forget what the original set taught
(real questions, real decompositions); the mix keeps every original row and adds, from each
adaptation source (pseudo rows of the corpus, a self-training round's rows), ``ratio`` rows per
original row (all of them when it has fewer), drawn whole question by whole question in a seeded
hash order, so a question's positive never lands without its negatives.
Validation is mixed the same way and interleaved by the same hash, so a capped evaluation
(``max_eval_rows``) still sees both sides.

The best ratio depends on the corpus (the adaptation benchmark chose 2.0 with HotpotQA or 2Wiki left
out, 1.0 with MuSiQue), so ``ratios`` lists candidates: ``efficientrag adapt`` fine-tunes one model
pair per candidate and keeps the one that scores best on questions with known gold
(:mod:`efficientrag.adapt.choice`). One value is a fixed ratio.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.jsonl import write_jsonl
from efficientrag.models.inputs import KINDS as MODELS
from efficientrag.setting_fields import SettingError, bounded, check_settings
from efficientrag.synth.merge import PARTS, read_unique_rows

_LAYOUT = "a training set folder holds labeler/ and filter/ with train.jsonl and validation.jsonl"


@dataclass(frozen=True)
class Ratio:
    """Adaptation rows per original row, from each adaptation source, for each model."""

    labeler: float
    filter: float

    @property
    def name(self) -> str:
        if self.labeler == self.filter:
            return f"{self.labeler:g}"
        return f"labeler {self.labeler:g}, filter {self.filter:g}"

    def to_dict(self) -> dict[str, float]:
        return {"labeler": self.labeler, "filter": self.filter}


@dataclass
class MixConfig:
    # Candidate ratios, for both models (0: original rows only). Several: each is fine-tuned and
    # the best on the pseudo-validation (and validation) questions is kept; one: a fixed ratio.
    ratios: list[float] = field(default_factory=lambda: [1.0, 2.0])
    # At most this many original training rows per model (whole questions, seeded; 0: all): a
    # shorter fine-tune on a large original set. The ratios count against the rows kept.
    original_rows: int = bounded(0, low=0)
    seed: int = 0
    # One fixed ratio per model instead of a choice (the unset one 1.0), as distillation mixes.
    # Setting either replaces ``ratios`` (no choice).
    labeler_ratio: float | None = None
    filter_ratio: float | None = None

    def __post_init__(self) -> None:
        if not self.ratios:
            raise SettingError(
                "mix.ratios needs at least one ratio (e.g. [1.0, 2.0]; one value: a fixed ratio)"
            )
        check_settings(self)
        old = [r for r in (self.labeler_ratio, self.filter_ratio) if r is not None]
        if min([*self.ratios, *old]) < 0:
            raise SettingError("mix.ratios, labeler_ratio and filter_ratio must be >= 0")
        if len(set(self.ratios)) != len(self.ratios):
            raise SettingError(f"mix.ratios lists a ratio twice: {self.ratios}")

    def candidates(self) -> list[Ratio]:
        if self.labeler_ratio is not None or self.filter_ratio is not None:
            lab, fil = (1.0 if r is None else r for r in (self.labeler_ratio, self.filter_ratio))
            return [Ratio(lab, fil)]
        return [Ratio(r, r) for r in self.ratios]

    def stage_key(self, ratio: Ratio) -> dict[str, Any]:
        """What a fine-tune with ``ratio`` depends on, spelled as the single-ratio config was, so
        folders made before ratios were candidates are still found."""
        return {
            "labeler_ratio": ratio.labeler,
            "filter_ratio": ratio.filter,
            "original_rows": self.original_rows,
            "seed": self.seed,
        }


def mix_training_sets(
    original: str | Path,
    adaptation: Sequence[str | Path],
    out_dir: str | Path,
    cfg: MixConfig,
    ratio: Ratio | None = None,
) -> dict[str, dict[str, dict[str, int]]]:
    """Write ``out_dir/{labeler,filter}/{train,validation}.jsonl``; returns the row counts by source.

    Args:
        original: the original training set folder.
        adaptation: adaptation row folders (same layout), each mixed in at ``ratio``.
        out_dir: where the mixed set goes.
        cfg: the mix settings.
        ratio: one of ``cfg.candidates()``; None: the config's only candidate.
    """
    if ratio is None:
        only = cfg.candidates()
        if len(only) > 1:
            raise InvalidArgumentError(f"mix.ratios has {len(only)} candidates: say which one to mix with")
        ratio = only[0]
    out = Path(out_dir)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for model in MODELS:
        share = ratio.labeler if model == "labeler" else ratio.filter
        counts[model] = {}
        seen: dict[str, Path] = {}
        for part in PARTS:
            base = read_unique_rows(Path(original) / model / f"{part}.jsonl", seen, _LAYOUT)
            if cfg.original_rows and part == "train":
                base = _take_questions(base, cfg.original_rows, cfg.seed)
            extra: list[dict[str, Any]] = []
            for src in adaptation if share > 0 else ():
                rows = read_unique_rows(Path(src) / model / f"{part}.jsonl", seen, _LAYOUT)
                extra += _take_questions(rows, round(share * len(base)), cfg.seed)
            if part == "train":
                rows = base + extra
            else:
                rows = sorted(
                    base + extra, key=lambda r: _hash(cfg.seed, str(r["question_id"]), str(r["id"]))
                )
            write_jsonl(out / model / f"{part}.jsonl", rows)
            counts[model][part] = {"original": len(base), "adaptation": len(extra)}
    return counts


def _take_questions(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """Whole questions in hash order until ``n`` rows (the last question may pass ``n``)."""
    if n <= 0:
        return []
    if len(rows) <= n:
        return rows
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_question[str(row["question_id"])].append(row)
    taken: list[dict[str, Any]] = []
    for qid in sorted(by_question, key=lambda q: _hash(seed, q)):
        if len(taken) >= n:
            break
        taken.extend(by_question[qid])
    return taken


def _hash(seed: int, *parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join((str(seed), *parts)).encode()).digest()[:8], "big")
