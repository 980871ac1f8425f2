"""What the reranker's run adds to the Hugging Face trainer, as ``TrainerCallback``s: the best epoch
kept in ``best/`` (the CrossEncoder layout, with its metrics and settings), the logs, and a session
that ends after ``stop_after_steps`` with a checkpoint to resume from.

The trainer itself runs the steps, the epoch-end evaluation (:mod:`efficientrag.training.
reranker_validation`) and the checkpoints (``checkpoints/checkpoint-<step>``: weights, optimizer,
scheduler, RNG and trainer state, which ``--resume`` reads back).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from efficientrag.atomic import replace_folder, staging_folder, write_text_atomic
from efficientrag.jsonl import JsonlAppender, read_jsonl, write_jsonl

METRICS_FILE = "metrics.json"
EVAL_LOG = "eval_log.jsonl"
TRAIN_LOG = "train_log.jsonl"
SCORE_KEY = "eval_score"  # the evaluator's ``score``, prefixed by the trainer


class KeepBest(TrainerCallback):
    """After each evaluation: log it, and save the model to ``best/`` when its score is the best so far.

    Args:
        out: The run folder.
        pool_names: The training files, in order (their metrics go to the logs by name).
        write_extras: Writes the run's own files into a staged ``best/`` (the resolved config).
        best_score: The best score of the evaluations before the checkpoint resumed from (None:
            none yet).
    """

    def __init__(
        self,
        out: Path,
        pool_names: list[str],
        write_extras: Callable[[Path], None],
        best_score: float | None = None,
    ) -> None:
        self.out, self.pool_names, self.write_extras = out, pool_names, write_extras
        self.best_score = best_score

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict[str, float], **kwargs: Any
    ) -> None:
        if not state.is_world_process_zero or SCORE_KEY not in metrics:
            return
        record = {"step": state.global_step, "epoch": epoch_of(state), **evaluation_record(metrics)}
        with JsonlAppender(self.out / EVAL_LOG) as log:
            log.write(record)
        if self.best_score is not None and record["score"] <= self.best_score:
            return
        self.best_score = record["score"]
        staged = staging_folder(self.out / "best")
        kwargs["model"].save_pretrained(str(staged), safe_serialization=True)
        self.write_extras(staged)
        write_text_atomic(staged / METRICS_FILE, json.dumps(record, indent=2))
        replace_folder(staged, self.out / "best")


def epoch_of(state: Any) -> int | float:
    """The trainer's epoch counter: a whole number at an epoch's end, a fraction inside one."""
    epoch = float(state.epoch or 0.0)
    return int(round(epoch)) if abs(epoch - round(epoch)) < 1e-6 else round(epoch, 4)


def evaluation_record(metrics: dict[str, float]) -> dict[str, Any]:
    """The trainer's ``eval_*`` metrics as ``{"score", "pools": {name: {"recall", "all_gold"}}}``."""
    pools: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        for measure in ("recall", "all_gold"):
            suffix = f"_{measure}"
            if key.startswith("eval_") and key.endswith(suffix) and key != "eval" + suffix:
                pools.setdefault(key[len("eval_") : -len(suffix)], {})[measure] = value
    return {"score": metrics[SCORE_KEY], "pools": pools}


class StepLog(TrainerCallback):
    """``train_log.jsonl``: the trainer's loss and learning rate at each logging step, and this
    session's optimizer steps and training seconds (evaluation excluded) for the final metrics."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.session_steps = 0
        self.train_seconds = 0.0
        self._tick: float | None = None

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._tick = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.session_steps += 1
        if self._tick is not None:
            self.train_seconds += time.perf_counter() - self._tick

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return
        with JsonlAppender(self.out / TRAIN_LOG) as log:
            log.write({"step": state.global_step, "epoch": epoch_of(state), **logs})


class StopAfter(TrainerCallback):
    """Ends the session after ``step`` optimizer steps with a checkpoint (0: never).

    A stop inside an epoch saves at once and skips the epoch-end evaluation (the resumed run
    evaluates the whole epoch); a stop on an epoch's last step lets that epoch evaluate and save
    as usual, so a resumed run never redoes a finished epoch.
    """

    def __init__(self, step: int) -> None:
        self.step = step
        self.stopped = False
        self._inside_epoch = False

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.step or state.global_step < self.step or state.global_step >= state.max_steps:
            return
        self.stopped = True
        control.should_training_stop = True
        self._inside_epoch = not isinstance(epoch_of(state), int)
        if self._inside_epoch:
            control.should_save = True

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.stopped and self._inside_epoch:
            control.should_evaluate = False
            control.should_save = False


class QuietProgress(ProgressCallback):
    """The trainer's progress bar with the latest loss beside it, instead of a printed dict per log:
    the script's stdout is its one JSON summary line, and the losses are in ``train_log.jsonl``."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if state.is_world_process_zero and self.training_bar is not None and logs and "loss" in logs:
            self.training_bar.set_postfix(loss=f"{float(logs['loss']):.4f}")


def quiet_console(trainer: Any, progress: bool) -> None:
    """Replace the trainer's printing callbacks: no dict on stdout, a bar only with ``progress``."""
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    if progress:
        trainer.add_callback(QuietProgress())


def trim_logs(out: Path, step: int) -> float | None:
    """Drop the log lines written after ``step`` (a resumed run redoes them) and return the best
    evaluation score left (None: none), which ``best/`` must beat from now on."""
    best = None
    for name in (TRAIN_LOG, EVAL_LOG):
        path = out / name
        if not path.is_file():
            continue
        kept = [r for r in read_jsonl(path, allow_torn_tail=True) if int(r.get("step", 0)) <= step]
        write_jsonl(path, kept)
        if name == EVAL_LOG:
            scores = [float(r["score"]) for r in kept if "score" in r]
            best = max(scores) if scores else None
    return best
