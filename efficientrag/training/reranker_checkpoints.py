"""Which checkpoint a reranker run resumes from, and when a run folder must be refused.

The Hugging Face trainer writes ``checkpoints/checkpoint-<step>/`` with ``trainer_state.json``
last, so a folder without it was torn by a kill and is passed over. As for the Labeler's loop
(:func:`efficientrag.training.checkpoint.resume_point`), a fresh run into a folder that holds a
checkpoint is refused, and a resumed run must agree with the saved config on every key that decides
its pairs, their order and its schedule (:data:`efficientrag.training.reranker_config.DATA_ORDER_KEYS`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from efficientrag.training.checkpoint import resume_point
from efficientrag.training.reranker_config import DATA_ORDER_KEYS, RerankerTrainConfig

STATE_FILE = "trainer_state.json"
FINAL_METRICS = "final_metrics.json"
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")


def last_checkpoint(root: Path) -> Path | None:
    """The complete ``checkpoint-<step>`` folder with the highest step under ``root``, or None."""
    if not root.is_dir():
        return None
    found = []
    for folder in root.iterdir():
        match = _CHECKPOINT.fullmatch(folder.name)
        if match and (folder / STATE_FILE).is_file():
            found.append((int(match.group(1)), folder))
    return max(found)[1] if found else None


def checkpoint_step(checkpoint: Path | None) -> int:
    """The optimizer step a checkpoint was written at (0 for None)."""
    if checkpoint is None:
        return 0
    return int(json.loads((checkpoint / STATE_FILE).read_text(encoding="utf-8"))["global_step"])


def checkpoint_to_resume(cfg: RerankerTrainConfig, out: Path, resume: bool) -> Path | None:
    """The checkpoint a resumed run continues from (None: start afresh).

    Raises:
        ConfigError: A fresh run into a folder that holds a checkpoint, or a resumed run whose
            settings changed on a key in ``DATA_ORDER_KEYS``.
    """
    previous = last_checkpoint(out / "checkpoints")
    decides = "the pairs, their order and the schedule"
    return resume_point(previous, cfg, out, resume, keys=DATA_ORDER_KEYS, decides=decides)


def completed_metrics(out: Path) -> dict | None:
    """The final metrics of a run that completed, or None."""
    path = out / FINAL_METRICS
    if not path.is_file():
        return None
    final = json.loads(path.read_text(encoding="utf-8"))
    return final if final.get("completed") else None
