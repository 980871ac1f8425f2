"""The one training loop for the Labeler and the Filter, on Accelerate.

``train(cfg)`` runs the same code on a laptop CPU, one GPU, several GPUs or DeepSpeed: the device
setup comes from ``accelerate launch`` / ``accelerate config``; this module only asks Accelerate to
prepare the objects. Run folder layout (``cfg.output_dir``)::

    train_config.yaml        the resolved config
    checkpoints/last/        accelerator.save_state + trainer_state.json (resume point)
    best/                    save_pretrained of the best evaluation so far: a transformers folder
                             (config.json, model.safetensors, tokenizer, README.md model card with
                             the data, settings and metrics) + train_config.yaml and metrics.json
    train_log.jsonl          one line per optimizer step (loss, lr, hash of the step's rows)
    eval_log.jsonl           one line per evaluation
    skipped_rows.jsonl       malformed input rows with file, line and reason
    final_metrics.json       written when training completes
"""

from __future__ import annotations

import json
import logging
import resource
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from efficientrag.atomic import write_text_atomic
from efficientrag.config import save_config
from efficientrag.errors import ConfigError
from efficientrag.jsonl import JsonlAppender, read_jsonl
from efficientrag.models.card import TRAIN_CONFIG_FILE, write_model_card
from efficientrag.models.inputs import KINDS
from efficientrag.models.modeling import MODEL_INPUTS, compute_loss
from efficientrag.training.checkpoint import (
    TrainerState,
    last_checkpoint,
    resume_point,
    save_last,
)
from efficientrag.training.config import DATA_ORDER_KEYS, TrainConfig
from efficientrag.training.distill import distilled_loss, teacher_outputs
from efficientrag.training.evaluate import evaluate
from efficientrag.training.metrics import SELECTION_METRIC
from efficientrag.training.setup import TrainingRun, setup_run
from efficientrag.training.step_log import StepLosses

logger = logging.getLogger(__name__)


def train(cfg: TrainConfig, *, resume: bool = False) -> dict[str, Any]:
    """Train ``cfg.model`` and return the final metrics (also written to ``final_metrics.json``).

    With ``resume=True`` the run continues from ``checkpoints/last`` (model, optimizer, scheduler,
    RNG, data position); a completed run returns its metrics without training again.

    Args:
        cfg: The run's settings.
        resume: Continue from ``checkpoints/last`` in ``cfg.output_dir``.

    Returns:
        The final metrics; for a session ended by ``stop_after_steps``, ``completed: False`` with
        the step and epoch reached.
    """
    # Setup: the checkpoint to resume from, then everything a step needs (training/setup.py).
    out = Path(cfg.output_dir)
    checkpoint = _checkpoint_to_resume(cfg, out, resume)
    if checkpoint is not None and _completed(checkpoint, out):
        logger.info("run in %s is already complete; nothing to do", out)
        return json.loads((out / "final_metrics.json").read_text(encoding="utf-8"))
    run = setup_run(cfg, checkpoint)
    session = _Session(run)

    # Train: epochs of optimizer steps, each step logged; evaluations and checkpoints on schedule.
    try:
        for epoch in range(run.state.epoch, run.num_epochs):
            if _train_epoch(run, session, epoch):
                break
            _end_epoch(run)
    finally:
        session.close()

    # Finish: a stopped session leaves its checkpoint to resume from; a finished run evaluates the
    # last weights if the schedule did not, and writes its final metrics.
    summary = session.summary()
    if session.stopped_early:
        run.accelerator.end_training()
        return {"completed": False, "global_step": run.state.global_step, "epoch": run.state.epoch, **summary}
    return _finish(run, summary)


def _train_epoch(run: TrainingRun, session: _Session, epoch: int) -> bool:
    """One pass over the training batches (the rest of one, when resuming inside it). True when the
    training ends inside it: the last step is done, or this session's stop step."""
    cfg, state, accelerator = run.cfg, run.state, run.accelerator
    # Accelerate's loader re-seeds the batch sampler with its own epoch counter on every iteration;
    # set that counter too, or a resumed run would replay the wrong epoch.
    run.sampler.set_epoch(epoch)
    if hasattr(run.train_loader, "set_epoch"):
        run.train_loader.set_epoch(epoch)
    skip = state.batches_in_epoch if epoch == state.epoch else 0
    state.epoch, state.batches_in_epoch = epoch, skip
    batches = accelerator.skip_first_batches(run.train_loader, skip) if skip else run.train_loader
    run.network.train()  # dropout on (a loaded backbone comes in eval mode)
    session.start_clock()
    for batch in batches:
        session.losses.add(_training_step(run, batch), batch["index"])
        state.batches_in_epoch += 1
        if not accelerator.sync_gradients:
            continue  # gradient accumulation: the optimizer step comes with a later micro-batch
        run.scheduler.step()
        state.global_step += 1
        session.log_step()
        if cfg.eval_steps and state.global_step % cfg.eval_steps == 0:
            evaluate_and_keep_best(run)
        done = state.global_step >= run.total_steps
        stop = bool(cfg.stop_after_steps) and state.global_step >= cfg.stop_after_steps and not done
        if (cfg.save_steps and state.global_step % cfg.save_steps == 0) or stop:
            save_checkpoint(run)
        if done or stop:
            session.stopped_early = stop
            return True
        session.start_clock()
    return False


def _training_step(run: TrainingRun, batch: dict[str, torch.Tensor]) -> Any:
    """Forward and backward for one micro-batch; Accelerate holds the optimizer step (and the
    clipping) back until the micro-batches of an accumulation step are all in. Returns the loss parts."""
    accelerator, network = run.accelerator, run.network
    with accelerator.accumulate(network):
        outputs = network(**{k: batch[k] for k in MODEL_INPUTS if k in batch})
        parts = compute_loss(outputs, batch, compat=run.cfg.compat, class_weights=run.class_weights)
        if run.teacher is not None:  # distillation: the teacher's soft targets on the same batch
            parts = distilled_loss(
                parts, outputs, teacher_outputs(run.teacher, batch), batch, run.distill_weights
            )
        accelerator.backward(parts.total)
        if accelerator.sync_gradients and run.cfg.max_grad_norm > 0:
            accelerator.clip_grad_norm_(network.parameters(), run.cfg.max_grad_norm)
        run.optimizer.step()
        run.optimizer.zero_grad(set_to_none=True)
    return parts


def _end_epoch(run: TrainingRun) -> None:
    """After a full pass: the next epoch is the resume point; evaluate here when the config asks for
    no step-wise evaluation; always checkpoint."""
    state = run.state
    state.epoch, state.batches_in_epoch = state.epoch + 1, 0
    if not run.cfg.eval_steps and state.last_eval_step != state.global_step:
        evaluate_and_keep_best(run)
    save_checkpoint(run)


def evaluate_and_keep_best(run: TrainingRun) -> dict[str, float]:
    """Evaluate, log, and save the weights to ``best/`` when the selection score improves."""
    cfg, state, accelerator, out = run.cfg, run.state, run.accelerator, run.out
    metrics = evaluate(accelerator, run.network, run.eval_loader, cfg, run.class_weights)
    state.last_eval_step = state.global_step
    score = metrics["score"]
    if run.main:
        with JsonlAppender(out / "eval_log.jsonl") as log:
            log.write({"step": state.global_step, "epoch": state.epoch, **metrics})
    accelerator.log({f"eval/{k}": v for k, v in metrics.items()}, step=state.global_step)
    if state.best_score is None or score > state.best_score:
        state.best_score, state.best_step, state.best_metrics = score, state.global_step, metrics
        weights = accelerator.get_state_dict(run.network)
        if run.main:
            best = run.model.save_pretrained(
                out / "best", state_dict=weights, training=run.training_record(metrics, state.global_step)
            )
            save_config(cfg, best / TRAIN_CONFIG_FILE)
            write_text_atomic(
                best / "metrics.json", json.dumps({"step": state.global_step, **metrics}, indent=2)
            )
    return metrics


def save_checkpoint(run: TrainingRun) -> None:
    save_last(run.accelerator, run.out / "checkpoints", run.state, extra=run.run_info)


def _finish(run: TrainingRun, session_summary: dict[str, Any]) -> dict[str, Any]:
    cfg, state, out = run.cfg, run.state, run.out
    if state.last_eval_step != state.global_step:
        evaluate_and_keep_best(run)
    state.completed = True
    save_checkpoint(run)
    final = {
        **state.final_summary(run.total_steps),
        "model": cfg.model,
        "backbone": cfg.backbone,
        "epochs": run.num_epochs,
        "samples_seen": state.samples_seen,
        "selection_metric": SELECTION_METRIC[cfg.model],
        "final_eval": _last_eval(out) if run.main else {},
        "mixed_precision": run.mixed_precision,
        "num_processes": run.accelerator.num_processes,
        "compat": cfg.compat,
        "class_weights": run.class_weights.tolist() if run.class_weights is not None else None,
        **run.data_info,
        **session_summary,
    }
    if run.main:
        write_text_atomic(out / "final_metrics.json", json.dumps(final, indent=2))
        if state.best_step is not None and (out / "best").is_dir():
            # The card now says the run completed, and how far it went.
            write_model_card(
                out / "best",
                run.model.config,
                run.training_record(state.best_metrics, state.best_step, completed=True),
            )
    run.accelerator.end_training()
    return final


class _Session:
    """This session's bookkeeping around the steps: the losses of the step being accumulated, the
    train log and progress bar, and the time and samples spent on training (not evaluation)."""

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.losses = StepLosses()
        self.train_log = JsonlAppender(run.out / "train_log.jsonl") if run.main else None
        self.progress = tqdm(
            total=run.total_steps,
            initial=run.state.global_step,
            desc=f"train {run.cfg.model}",
            disable=not run.main,
        )
        self.seconds = 0.0
        self.samples = 0
        self.tick = time.perf_counter()
        self.stopped_early = False

    def start_clock(self) -> None:
        self.tick = time.perf_counter()

    def log_step(self) -> None:
        """An optimizer step is done: count its samples and time, write its log line, start the next."""
        run, state, accelerator = self.run, self.run.state, self.run.accelerator
        step_samples = int(
            accelerator.gather(torch.tensor([self.losses.rows], device=accelerator.device)).sum()
        )
        state.samples_seen += step_samples
        self.samples += step_samples
        self.seconds += time.perf_counter() - self.tick
        record = self.losses.record(state, run.scheduler.get_last_lr()[0], accelerator)
        if self.train_log is not None:
            self.train_log.write(record)
        if state.global_step % max(run.cfg.logging_steps, 1) == 0:
            accelerator.log(
                {f"train/{k}": v for k, v in record.items() if isinstance(v, float)}, step=state.global_step
            )
            self.progress.set_postfix(loss=f"{record['loss']:.4f}")
        self.losses = StepLosses()
        self.progress.update(1)

    def close(self) -> None:
        self.progress.close()
        if self.train_log is not None:
            self.train_log.close()

    def summary(self) -> dict[str, float]:
        return {
            "train_runtime_s": self.seconds,
            "train_samples_per_second": self.samples / self.seconds if self.seconds > 0 else 0.0,
            "session_samples": self.samples,
            **_peak_memory(),
        }


def _checkpoint_to_resume(cfg: TrainConfig, out: Path, resume: bool) -> Path | None:
    """The checkpoint a resumed run continues from; refuses a config that cannot train, and a fresh
    run into a folder that already holds one."""
    if cfg.model not in KINDS:
        raise ConfigError(f"config 'model' must be one of {KINDS}, got {cfg.model!r}")
    if not cfg.data_dir:
        raise ConfigError("config 'data_dir' is required (a folder with train.jsonl and validation.jsonl)")
    previous = last_checkpoint(out / "checkpoints")
    return resume_point(
        previous, cfg, out, resume, keys=DATA_ORDER_KEYS, decides="the data order and the schedule"
    )


def _completed(checkpoint: Path, out: Path) -> bool:
    return TrainerState.read(checkpoint).completed and (out / "final_metrics.json").is_file()


def _last_eval(out: Path) -> dict[str, Any]:
    path = out / "eval_log.jsonl"
    records = list(read_jsonl(path, allow_torn_tail=True)) if path.is_file() else []
    return records[-1] if records else {}


def _peak_memory() -> dict[str, float]:
    peak = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    if torch.cuda.is_available():
        peak["peak_gpu_memory_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return peak
