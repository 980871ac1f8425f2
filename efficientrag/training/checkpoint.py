"""The resumable ``checkpoints/last`` folder, replaced atomically so a kill never leaves it torn.

``accelerator.save_state`` writes model, optimizer, scheduler, grad-scaler and RNG states; we add
``trainer_state.json`` (step, epoch, batches consumed in the epoch, best score so far) last, so a
folder without it is incomplete and ignored. The new state is written to ``last.tmp`` and swapped
in with renames; if a kill lands between the two renames, ``last.old`` is still complete and is
used. Loading goes through accelerate, which reads tensors with ``torch.load(weights_only=True)``;
the files are our own, written by this run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from accelerate import Accelerator

from efficientrag.atomic import replace_folder, staging_folder, write_text_atomic
from efficientrag.config import load_config
from efficientrag.errors import ConfigError
from efficientrag.models.card import TRAIN_CONFIG_FILE

logger = logging.getLogger(__name__)

STATE_FILE = "trainer_state.json"


@dataclass
class TrainerState:
    global_step: int = 0
    epoch: int = 0
    batches_in_epoch: int = 0  # batches of ``epoch`` already consumed (this process's loader)
    samples_seen: int = 0
    best_score: float | None = None
    best_step: int | None = None
    best_metrics: dict[str, float] = field(default_factory=dict)
    last_eval_step: int = -1
    completed: bool = False

    @classmethod
    def read(cls, folder: Path) -> TrainerState:
        data = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def write(self, folder: Path) -> None:
        write_text_atomic(folder / STATE_FILE, json.dumps(asdict(self), indent=2))

    def final_summary(self, total_steps: int) -> dict[str, Any]:
        """What every trainer's ``final_metrics.json`` opens with: whether the run completed, how
        far it went, and its best evaluation (the one its ``best/`` folder holds)."""
        return {
            "completed": self.completed,
            "global_step": self.global_step,
            "total_steps": total_steps,
            "best_step": self.best_step,
            "best_score": self.best_score,
            "best": self.best_metrics,
        }


def last_checkpoint(root: Path) -> Path | None:
    """The newest complete checkpoint under ``root`` (``last``, else ``last.old``), or None."""
    for name in ("last", "last.old"):
        folder = root / name
        if (folder / STATE_FILE).is_file():
            return folder
    return None


def resume_point(
    previous: Path | None, cfg: Any, out: Path, resume: bool, *, keys: Sequence[str], decides: str
) -> Path | None:
    """The checkpoint a run in ``out`` continues from, given the newest one found there.

    A fresh run into a folder that already holds a checkpoint is refused, so two runs never mix
    their files; ``resume`` with no checkpoint to continue starts afresh, with a warning; a resumed
    run must agree with the config it saved (``out/train_config.yaml``) on every key in ``keys``:
    those decide what the run trains on and in which order, so a changed one would not continue it.

    Args:
        previous: The newest complete checkpoint under ``out / "checkpoints"`` (None: none).
        cfg: The config dataclass of this run.
        out: The run folder.
        resume: Whether the run was asked to continue.
        keys: The fields a resumed run must keep.
        decides: What those fields decide, for the message (``"the data order and the schedule"``).

    Returns:
        ``previous`` when the run resumes from it, else None (start afresh).

    Raises:
        ConfigError: ``previous`` exists and ``resume`` is False, or a field in ``keys`` changed (the
            message names each, old and new value).
    """
    if previous is not None and not resume:
        raise ConfigError(
            f"{out} already holds a training run (checkpoint {previous}); pass --resume to continue it "
            "or choose another output_dir"
        )
    if not resume:
        return None
    if previous is None:
        logger.warning("--resume given but %s has no checkpoint; starting a new run", out / "checkpoints")
        return None
    _check_resumable(cfg, out / TRAIN_CONFIG_FILE, keys, decides)
    return previous


def _check_resumable(cfg: Any, saved_path: Path, keys: Sequence[str], decides: str) -> None:
    """Refuse a resumed run whose saved config differs from ``cfg`` on a key in ``keys``."""
    if not saved_path.is_file():
        return
    saved = load_config(type(cfg), saved_path)
    differs = [k for k in keys if _spelled_alike(getattr(saved, k)) != _spelled_alike(getattr(cfg, k))]
    if differs:
        detail = ", ".join(f"{k}: {getattr(saved, k)!r} -> {getattr(cfg, k)!r}" for k in differs)
        raise ConfigError(
            f"cannot resume the run in {saved_path.parent}: {detail} changed since it started "
            f"(these decide {decides})"
        )


def _spelled_alike(value: Any) -> Any:
    """A value as the comparison sees it: a path that exists, by where it leads, so the same folder
    named relative to the working directory or absolute is the same folder."""
    if isinstance(value, str) and value and Path(value).exists():
        return str(Path(value).resolve())
    return value


def save_last(
    accelerator: Accelerator, root: Path, state: TrainerState, extra: dict[str, Any] | None = None
) -> Path:
    """Write a complete checkpoint and make it ``root/last``. Every process must call this."""
    last = root / "last"
    tmp = staging_folder(last, clear=accelerator.is_main_process)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if extra:
            write_text_atomic(tmp / "run_info.json", json.dumps(extra, indent=2))
        state.write(tmp)
        replace_folder(tmp, last)
    accelerator.wait_for_everyone()
    return last
