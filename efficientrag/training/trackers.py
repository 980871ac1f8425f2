"""Experiment trackers through Accelerate, chosen so nothing leaves the machine unless asked.

``trackers`` is empty by default. ``wandb`` runs in ``offline`` mode unless the config says
``wandb_mode: online``, and a ``WANDB_MODE`` set in the environment overrides the config (W&B
itself lets ``wandb.init(mode=...)`` beat the environment, so without this a cluster's or a test
suite's ``WANDB_MODE=disabled`` would not stop a preset's tracker); a tracker whose package is missing is skipped with a warning, and a
tracker that fails to start is dropped, so training never fails because of a tracker. The run
always writes its own ``train_log.jsonl`` and ``eval_log.jsonl`` regardless.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Any

from accelerate import Accelerator

from efficientrag.errors import InvalidArgumentError

logger = logging.getLogger(__name__)

PACKAGES = {
    "wandb": "wandb",
    "tensorboard": "tensorboard",
    "mlflow": "mlflow",
    "comet_ml": "comet_ml",
    "aim": "aim",
    "clearml": "clearml",
    "dvclive": "dvclive",
    "swanlab": "swanlab",
    "trackio": "trackio",
}


def available_trackers(names: list[str]) -> list[str]:
    chosen = []
    for name in names:
        package = PACKAGES.get(name)
        if package is None:
            raise InvalidArgumentError(f"unknown tracker {name!r}; known: {sorted(PACKAGES)}")
        if importlib.util.find_spec(package) is None and not (
            name == "tensorboard" and importlib.util.find_spec("tensorboardX") is not None
        ):
            logger.warning("tracker %r requested but package %r is not installed; skipping it", name, package)
            continue
        chosen.append(name)
    return chosen


def start_trackers(
    accelerator: Accelerator,
    names: list[str],
    *,
    project: str,
    run_name: str,
    wandb_mode: str,
    output_dir: Path,
    config: dict[str, Any],
) -> None:
    if not names:
        return
    init_kwargs: dict[str, dict[str, Any]] = {}
    if "wandb" in names:
        mode = os.environ.get("WANDB_MODE") or wandb_mode
        init_kwargs["wandb"] = {"mode": mode, "dir": str(output_dir), "name": run_name or None}
        logger.info("wandb: %s mode, run files under %s", mode, output_dir / "wandb")
    try:
        accelerator.init_trackers(project, config=_flat(config), init_kwargs=init_kwargs)
    except Exception as exc:  # a tracker must never take training down
        logger.warning("could not start trackers %s (%s); continuing without them", names, exc)
        accelerator.trackers = []


def _flat(config: dict[str, Any]) -> dict[str, Any]:
    """Trackers accept scalars only."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        out[key] = value if isinstance(value, (int, float, str, bool)) or value is None else str(value)
    return out
