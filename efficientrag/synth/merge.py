"""Union of the training sets of several synthesis runs (e.g. a dataset's train file and part of
its dev file, each synthesized over its own corpus), so one model trains on all of them.

Each run keeps its own train/validation split (by question), so the union still has no question on
both sides; a row id seen twice means the same question came from two runs, which would weight it
twice and could put it on both sides: that is an error, not something to paper over.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efficientrag.errors import InvalidArgumentError, MissingFileError
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models.inputs import KINDS

PARTS = ("train", "validation")


def merge_training_sets(sources: Sequence[str | Path], out_dir: str | Path) -> dict[str, dict[str, int]]:
    """Write ``out_dir/{labeler,filter}/{train,validation}.jsonl``; returns the row counts."""
    if not sources:
        raise InvalidArgumentError("merge_training_sets needs at least one synthesis output folder")
    out = Path(out_dir)
    counts: dict[str, dict[str, int]] = {}
    for model in KINDS:
        seen: dict[str, Path] = {}
        counts[model] = {}
        for part in PARTS:
            rows = []
            for src in map(Path, sources):
                hint = f"run the synthesis 'build' stage for {src}"
                rows += read_unique_rows(src / model / f"{part}.jsonl", seen, hint)
            write_jsonl(out / model / f"{part}.jsonl", rows)
            counts[model][part] = len(rows)
    return counts


def read_unique_rows(path: Path, seen: dict[str, Path], missing_hint: str) -> list[dict[str, Any]]:
    """The rows of one training file; ``seen`` (row id -> file) spans every file of a union, so a
    question read twice fails naming both files instead of being weighted twice."""
    if not path.is_file():
        raise MissingFileError(f"{path}: missing ({missing_hint})")
    rows = []
    for row in read_jsonl(path):
        rid = str(row.get("id"))
        if rid in seen:
            raise InvalidArgumentError(f"{path}: row id {rid!r} is also in {seen[rid]}")
        seen[rid] = path
        rows.append(row)
    return rows
