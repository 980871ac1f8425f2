"""TreeHop training on Accelerate, with the package's training infrastructure.

The Labeler/Filter loop (:mod:`efficientrag.training.loop`) is built around tokenized token
classification rows; TreeHop trains on cached vectors and chain paths, so it has this compact loop
of its own that reuses the same pieces: the resumable ``checkpoints/last`` (model, optimizer,
scheduler, RNG and data position through ``accelerator.save_state``), trackers through
Accelerate (offline by default), a progress bar, ``train_log.jsonl``/``eval_log.jsonl``, and the
config loader. It reads like the Labeler's loop: setup (:mod:`efficientrag.treehop.training_setup`),
a step, evaluation and checkpoints on schedule, finish. Run folder (``output_dir``)::

    train_config.yaml      the resolved config
    checkpoints/last/      resume point
    best/                  TreeHop.save_pretrained of the best validation search so far
    train_log.jsonl        one line per optimizer step
    eval_log.jsonl         one line per validation search
    final_metrics.json     written when training completes

The pools (each training file with its dense index) come from the caller: the training script
(:func:`efficientrag.experiment.pools.open_pools`) or a benchmark that shares them with EfficientRAG.
Batches are questions (with all their chain paths), shuffled per epoch by ``seed + epoch`` and
dealt round-robin to the processes. Each epoch ends with the tree search on the validation
questions of every training file; the best score keeps ``best/``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from efficientrag.atomic import write_text_atomic
from efficientrag.jsonl import JsonlAppender
from efficientrag.retrieval.metrics import protocol_score
from efficientrag.training.checkpoint import save_last
from efficientrag.training.pool import Pool, require_pools
from efficientrag.treehop.config import TreeHopTrainConfig
from efficientrag.treehop.loss import LossParts, chain_loss
from efficientrag.treehop.model import TreeHop
from efficientrag.treehop.training_setup import (
    TreeHopRun,
    checkpoint_to_resume,
    completed,
    setup_treehop_run,
)
from efficientrag.treehop.validation import search_scores

logger = logging.getLogger(__name__)

SELECTION = "mean over training files of (recall + all-gold) / 2, tree search on validation questions"

__all__ = ["SELECTION", "evaluate_and_keep_best", "train_treehop"]


def train_treehop(
    cfg: TreeHopTrainConfig, *, resume: bool = False, pools: Sequence[Pool] | None = None
) -> dict[str, Any]:
    """Train (or resume, or return the metrics of a finished run) and return the final metrics
    (also written to ``final_metrics.json``).

    Args:
        cfg: the run's settings (``output_dir``, ``work_dir`` for the vector cache, the schedule).
        resume: continue from ``checkpoints/last`` (network, optimizer, scheduler, RNG, data
            position); a completed run returns its metrics without training again.
        pools: the training files opened with their dense indexes; build them from ``cfg`` with
            :func:`efficientrag.experiment.pools.open_pools`.

    Returns:
        The final metrics; ``{"completed": False, ...}`` when ``cfg.stop_after_steps`` ended
        the session early.
    """
    pools = require_pools(pools, "train_treehop")
    # Setup: the checkpoint to resume from, then everything a step needs (training_setup.py).
    out = Path(cfg.output_dir)
    checkpoint = checkpoint_to_resume(cfg, out, resume)
    if checkpoint is not None and completed(checkpoint, out):
        logger.info("run in %s is already complete; nothing to do", out)
        return json.loads((out / "final_metrics.json").read_text(encoding="utf-8"))
    run = setup_treehop_run(cfg, pools, checkpoint)
    session = _Session(run)

    # Train: epochs of optimizer steps, each step logged; evaluations and checkpoints on schedule.
    run.network.train()
    try:
        for epoch in range(run.state.epoch, cfg.epochs):
            if _train_epoch(run, session, epoch):
                break
            _end_epoch(run, epoch)
    finally:
        session.close()

    # Finish: a stopped session leaves its checkpoint to resume from; a finished run writes its
    # final metrics.
    if session.stopped_early:
        run.accelerator.end_training()
        return {"completed": False, "global_step": run.state.global_step, "epoch": run.state.epoch}
    return _finish(run, time.perf_counter() - session.started)


def _train_epoch(run: TreeHopRun, session: _Session, epoch: int) -> bool:
    """One pass over this process's question batches (the rest of one, when resuming inside it),
    shuffled by ``seed + epoch``. True when this session's stop step ends the training inside it."""
    cfg, state, accelerator = run.cfg, run.state, run.accelerator
    n_items = len(run.train_set.items)
    order = np.random.default_rng(cfg.seed + epoch).permutation(n_items)
    batches = [order[i : i + cfg.batch_size] for i in range(0, n_items, cfg.batch_size)]
    mine = batches[accelerator.process_index :: accelerator.num_processes]
    skip = state.batches_in_epoch if epoch == state.epoch else 0
    state.epoch, state.batches_in_epoch = epoch, skip
    for rows in mine[skip:]:
        parts = _training_step(run, rows)
        state.batches_in_epoch += 1
        if not accelerator.sync_gradients:
            continue  # gradient accumulation: the optimizer step comes with a later micro-batch
        run.scheduler.step()
        state.global_step += 1
        session.log_step(parts, epoch)
        if cfg.stop_after_steps and state.global_step >= cfg.stop_after_steps:
            save_checkpoint(run)
            session.stopped_early = True
            return True
    return False


def _training_step(run: TreeHopRun, rows: np.ndarray) -> LossParts:
    """InfoNCE over one batch of questions' chain paths, forward and backward; Accelerate holds the
    optimizer step (and the clipping) back until an accumulation step's batches are all in."""
    cfg, accelerator, network = run.cfg, run.accelerator, run.network
    with accelerator.accumulate(network):
        parts = chain_loss(
            network,
            run.questions,
            run.chunks,
            [run.train_set.items[int(i)] for i in rows],
            temperature=cfg.temperature,
            own=cfg.own_negatives,
            in_batch=cfg.in_batch_negatives,
        )
        accelerator.backward(parts.loss)
        if accelerator.sync_gradients and cfg.max_grad_norm > 0:
            accelerator.clip_grad_norm_(network.parameters(), cfg.max_grad_norm)
        run.optimizer.step()
        run.optimizer.zero_grad(set_to_none=True)
    return parts


def _end_epoch(run: TreeHopRun, epoch: int) -> None:
    """After a full pass: the next epoch is the resume point; evaluate and checkpoint on schedule
    (always after the last epoch)."""
    cfg, state = run.cfg, run.state
    state.epoch, state.batches_in_epoch = epoch + 1, 0
    last = epoch + 1 == cfg.epochs
    if (epoch + 1) % cfg.eval_every_epochs == 0 or last:
        evaluate_and_keep_best(run, epoch + 1)
    if (epoch + 1) % cfg.save_every_epochs == 0 or last:
        save_checkpoint(run)


def evaluate_and_keep_best(run: TreeHopRun, epoch: int) -> dict[str, float]:
    """The tree search on the validation questions, logged; saves the network to ``best/`` when the
    protocol score improves."""
    state, accelerator, out = run.state, run.accelerator, run.out
    model = TreeHop(accelerator.unwrap_model(run.network), accelerator.device)
    per_pool = search_scores(
        model, run.retrievers, run.validation, run.eval_settings, question_vectors=run.encoded_validation
    )
    run.network.train()
    score = protocol_score(per_pool)
    flat = {"score": score, **{f"{p}/{k}": v for p, s in per_pool.items() for k, v in s.items()}}
    state.last_eval_step = state.global_step
    if run.main:
        with JsonlAppender(out / "eval_log.jsonl") as log:
            log.write({"step": state.global_step, "epoch": epoch, **flat})
    accelerator.log({f"eval/{k}": v for k, v in flat.items()}, step=state.global_step)
    if state.best_score is None or score > state.best_score:
        state.best_score, state.best_step, state.best_metrics = score, state.global_step, flat
        state.best_epoch = epoch
        weights = accelerator.get_state_dict(run.network)
        if run.main:
            metrics = {"step": state.global_step, "epoch": epoch, "selection": SELECTION, **flat}
            model.save_pretrained(
                out / "best",
                state_dict=weights,
                run_files={
                    "train_config.yaml": (out / "train_config.yaml").read_text(encoding="utf-8"),
                    "metrics.json": json.dumps(metrics, indent=2),
                },
            )
    return flat


def save_checkpoint(run: TreeHopRun) -> None:
    save_last(run.accelerator, run.checkpoints, run.state, extra={"total_steps": run.total_steps})


def _finish(run: TreeHopRun, seconds: float) -> dict[str, Any]:
    cfg, state, accelerator = run.cfg, run.state, run.accelerator
    state.completed = True
    save_checkpoint(run)
    final = {
        **state.final_summary(run.total_steps),
        "epochs": cfg.epochs,
        "best_epoch": state.best_epoch,
        "selection": SELECTION,
        "parameters": sum(p.numel() for p in accelerator.unwrap_model(run.network).parameters()),
        "train_seconds_this_session": seconds,
        "num_processes": accelerator.num_processes,
        "training_data": run.train_set.info,
    }
    if run.main:
        write_text_atomic(run.out / "final_metrics.json", json.dumps(final, indent=2))
    accelerator.end_training()
    return final


class _Session:
    """This session's bookkeeping around the steps: the train log, the progress bar and the clock."""

    def __init__(self, run: TreeHopRun) -> None:
        self.run = run
        self.train_log = JsonlAppender(run.out / "train_log.jsonl") if run.main else None
        self.progress = tqdm(
            total=run.total_steps,
            initial=run.state.global_step,
            desc="train treehop",
            disable=not (run.main and run.cfg.progress),
        )
        self.started = time.perf_counter()
        self.stopped_early = False

    def log_step(self, parts: LossParts, epoch: int) -> None:
        """An optimizer step is done: write its log line, report it, move the progress bar."""
        run, state = self.run, self.run.state
        record = {
            "step": state.global_step,
            "epoch": epoch,
            "loss": float(parts.loss.detach()),
            "top1": parts.top1,
            "targets": parts.targets,
            "lr": float(run.scheduler.get_last_lr()[0]),
        }
        if self.train_log is not None:
            self.train_log.write(record)
        run.accelerator.log({"train/loss": record["loss"], "train/top1": parts.top1}, step=state.global_step)
        self.progress.set_postfix(loss=f"{record['loss']:.3f}")
        self.progress.update(1)

    def close(self) -> None:
        self.progress.close()
        if self.train_log is not None:
            self.train_log.close()
