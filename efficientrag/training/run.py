"""One model's training run in a folder: trained, resumed, or read back when it already finished.

The quickstart trains its Labeler and Filter this way and label-free adaptation fine-tunes them this
way, so both go through the same call: rerunning either after a kill continues the run from its
``checkpoints/last`` instead of refusing the folder, and a finished run is not trained twice.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from efficientrag.training.config import TrainConfig


def train_model(base: TrainConfig, data_dir: str | Path, output_dir: str | Path) -> dict[str, Any]:
    """Train (or resume, or reuse a finished run of) one model; returns its final metrics.

    Args:
        base: the training settings; its ``data_dir`` and ``output_dir`` are replaced by the two below.
        data_dir: a folder with ``train.jsonl`` and ``validation.jsonl`` for ``base.model``.
        output_dir: the run folder; a checkpoint already there is resumed.

    Returns:
        The final metrics of :func:`efficientrag.training.loop.train` (``final_metrics.json``).
    """
    from efficientrag.training.checkpoint import last_checkpoint
    from efficientrag.training.loop import train  # torch and accelerate, once a run starts

    cfg = replace(base, data_dir=str(data_dir), output_dir=str(output_dir))
    resume = last_checkpoint(Path(output_dir) / "checkpoints") is not None
    return train(cfg, resume=resume)


def brief_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """What a job records of a training run it made (adapt.json, distill.json): the best step and
    its scores, the rows and the time; the full metrics stay in the run folder.

    Args:
        metrics: a run's final metrics, as :func:`train_model` returns them.

    Returns:
        ``best_step``, ``train_rows``, ``train_runtime_s`` and the best evaluation's token F1, tag
        accuracy, tag F1 and score (those it has).
    """
    best = metrics.get("best") or {}
    keep = ("token_f1", "tag_accuracy", "tag_f1", "score")
    return {
        "best_step": metrics.get("best_step"),
        "train_rows": metrics.get("train_rows"),
        "train_runtime_s": metrics.get("train_runtime_s"),
        **{k: best[k] for k in keep if k in best},
    }
