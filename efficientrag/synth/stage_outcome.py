"""What one synthesis stage kept and rejected in an output folder, and starting another run from a
finished stage.

Comparing teachers (annotations vs an LLM) means reading the same counts from several folders;
reusing a finished stage lets a later stage meet another teacher's real output (an LLM labelling
the annotation teacher's decompositions when it cannot decompose well itself).
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from efficientrag.errors import MissingFileError
from efficientrag.jsonl import read_records
from efficientrag.synth.records import OUTPUT_FILES
from efficientrag.synth.stage import stage_paths


def stage_outcome(out_dir: str | Path, stage: str) -> dict[str, Any]:
    """``{"kept", "rejected", "reasons"}`` for ``stage`` in ``out_dir`` (zeros before it runs)."""
    paths = stage_paths(out_dir, stage, OUTPUT_FILES.get(stage))
    rejects = read_records(paths["rejects"])
    return {
        "kept": len(read_records(paths["output"])),
        "rejected": len(rejects),
        "reasons": dict(Counter(str(r.get("reason", "?")) for r in rejects)),
    }


def copy_finished_stage(src: str | Path, dst: str | Path, stage: str) -> None:
    """Copy ``stage``'s files from ``src`` into ``dst`` so a run in ``dst`` starts after it.
    Refuses a stage that has not finished (its records would be a partial start); never
    overwrites what ``dst`` already has, so a resumed run keeps its own state."""
    src_paths = stage_paths(src, stage, OUTPUT_FILES.get(stage))
    if not src_paths["done"].is_file():
        raise MissingFileError(f"{src}: stage {stage!r} has not finished (no {src_paths['done'].name})")
    dst_paths = stage_paths(dst, stage, OUTPUT_FILES.get(stage))
    Path(dst).mkdir(parents=True, exist_ok=True)
    for key, path in src_paths.items():
        if path.is_file() and not dst_paths[key].is_file():
            shutil.copyfile(path, dst_paths[key])
