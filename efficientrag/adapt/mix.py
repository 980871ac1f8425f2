"""The fine-tuning set: the original training rows plus a share of adaptation rows.

Fine-tuning on adaptation rows alone would let the models forget what the original set taught
(real questions, real decompositions); the mix keeps every original row and adds, from each
adaptation source (pseudo rows of the corpus, a self-training round's rows), ``ratio`` rows per
original row (all of them when it has fewer), drawn whole question by whole question in a seeded
hash order, so a question's positive never lands without its negatives.
Validation is mixed the same way and interleaved by the same hash, so a capped evaluation
(``max_eval_rows``) still sees both sides.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from efficientrag.jsonl import write_jsonl
from efficientrag.models.inputs import KINDS as MODELS
from efficientrag.synth.merge import PARTS, read_unique_rows

_LAYOUT = "a training set folder holds labeler/ and filter/ with train.jsonl and validation.jsonl"


@dataclass
class MixConfig:
    # Rows per original training row from each adaptation source, per model (0: original rows only).
    labeler_ratio: float = 1.0
    filter_ratio: float = 1.0
    # At most this many original training rows per model (whole questions, seeded; 0: all): a
    # shorter fine-tune on a large original set. The ratios count against the rows kept.
    original_rows: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.labeler_ratio < 0 or self.filter_ratio < 0 or self.original_rows < 0:
            raise ValueError("labeler_ratio, filter_ratio and original_rows must be >= 0")


def mix_training_sets(
    original: str | Path, adaptation: Sequence[str | Path], out_dir: str | Path, cfg: MixConfig
) -> dict[str, dict[str, dict[str, int]]]:
    """Write ``out_dir/{labeler,filter}/{train,validation}.jsonl``; returns the row counts by source."""
    out = Path(out_dir)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for model in MODELS:
        ratio = cfg.labeler_ratio if model == "labeler" else cfg.filter_ratio
        counts[model] = {}
        seen: dict[str, Path] = {}
        for part in PARTS:
            base = read_unique_rows(Path(original) / model / f"{part}.jsonl", seen, _LAYOUT)
            if cfg.original_rows and part == "train":
                base = _take_questions(base, cfg.original_rows, cfg.seed)
            extra: list[dict[str, Any]] = []
            for src in adaptation if ratio > 0 else ():
                rows = read_unique_rows(Path(src) / model / f"{part}.jsonl", seen, _LAYOUT)
                extra += _take_questions(rows, round(ratio * len(base)), cfg.seed)
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
