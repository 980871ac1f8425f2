"""TreeHop training on Accelerate, with the package's training infrastructure.

The Labeler/Filter loop (:mod:`efficientrag.training.loop`) is built around tokenized token
classification rows; TreeHop trains on cached vectors and chain paths, so it has this compact loop
of its own that reuses the same pieces: the resumable ``checkpoints/last`` (model, optimizer,
scheduler, RNG and data position through ``accelerator.save_state``), trackers through
Accelerate (offline by default), a progress bar, ``train_log.jsonl``/``eval_log.jsonl``, and the
config loader. Run folder (``output_dir``)::

    train_config.yaml      the resolved config
    checkpoints/last/      resume point
    best/                  TreeHop.save_pretrained of the best validation search so far
    train_log.jsonl        one line per optimizer step
    eval_log.jsonl         one line per validation search
    final_metrics.json     written when training completes

Batches are questions (with all their chain paths), shuffled per epoch by ``seed + epoch`` and
dealt round-robin to the processes. Each epoch ends with the tree search on the validation
questions of every training file; the best score keeps ``best/``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm
from transformers import get_constant_schedule_with_warmup

from efficientrag.atomic import write_text_atomic
from efficientrag.config import ConfigError, load_config, to_dict
from efficientrag.jsonl import JsonlAppender
from efficientrag.training.checkpoint import TrainerState, last_checkpoint, save_last
from efficientrag.training.setup import open_run_outputs, resolve_mixed_precision
from efficientrag.training.trackers import available_trackers
from efficientrag.treehop.config import TreeHopRetrievalConfig
from efficientrag.treehop.configuration import TreeHopConfig
from efficientrag.treehop.loss import chain_loss
from efficientrag.treehop.model import TreeHop
from efficientrag.treehop.modeling import TreeHopNetwork
from efficientrag.treehop.train_config import DATA_ORDER_KEYS, TreeHopTrainConfig
from efficientrag.treehop.training_data import Pool, build_training_sets
from efficientrag.treehop.validation import protocol_score, search_scores
from efficientrag.treehop.vectors import IndexVectors

logger = logging.getLogger(__name__)

SELECTION = "mean over training files of (recall + all-gold) / 2, tree search on validation questions"


def train_treehop(
    cfg: TreeHopTrainConfig, *, resume: bool = False, pools: Sequence[Pool] | None = None
) -> dict[str, Any]:
    """Train (or resume, or return the metrics of a finished run). ``pools``: training files
    already opened with their dense indexes (the benchmark shares them with EfficientRAG);
    otherwise ``cfg.train_sets`` are read and indexed under ``cfg.work_dir``."""
    out = Path(cfg.output_dir)
    ckpt_root = out / "checkpoints"
    previous = last_checkpoint(ckpt_root)
    if previous is not None and not resume:
        raise ConfigError(
            f"{out} already holds a training run (checkpoint {previous}); pass --resume to continue it "
            "or choose another output_dir"
        )
    if resume and previous is not None:
        _check_resumable(cfg, out / "train_config.yaml")
        if TreeHopState.read(previous).completed and (out / "final_metrics.json").is_file():
            logger.info("run in %s is already complete; nothing to do", out)
            return json.loads((out / "final_metrics.json").read_text(encoding="utf-8"))

    if pools is None:
        pools = open_pools(cfg)
    encoder = _common_encoder(pools)
    train_set, validation = build_training_sets(
        pools,
        Path(cfg.work_dir) / "vectors",
        validation_ratio=cfg.validation_ratio,
        split_seed=cfg.split_seed,
    )
    if cfg.max_train_questions and cfg.max_train_questions < len(train_set.items):
        keep = np.random.default_rng(cfg.seed).permutation(len(train_set.items))[: cfg.max_train_questions]
        train_set.items = [train_set.items[int(i)] for i in sorted(keep)]
        train_set.info["train_questions_used"] = len(train_set.items)
    if not train_set.items:
        raise ConfigError(
            "no training question has a hop chain with an edge (only comparison questions, or every "
            f"bridge order ambiguous): {json.dumps(train_set.info['pools'])}"
        )
    retrievers = {p.name: p.retriever for p in pools}

    trackers = available_trackers(list(cfg.trackers))
    accelerator = Accelerator(
        mixed_precision=resolve_mixed_precision(cfg.mixed_precision),
        gradient_accumulation_steps=cfg.grad_accumulation,
        log_with=trackers or None,
        project_dir=str(out),
    )
    main = accelerator.is_main_process
    if main:
        out.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)
    config = TreeHopConfig(
        embed_dim=encoder.dim,
        gate_dim=cfg.model.gate_dim,
        num_heads=cfg.model.num_heads,
        num_blocks=cfg.model.num_blocks,
        score_scale=cfg.model.score_scale,
        dropout=cfg.model.dropout,
        initializer_range=cfg.model.initializer_range,
        encoder_name=encoder.encoder.name,
        encoder_normalize=bool(encoder.encoder.normalize),
    )
    network = TreeHopNetwork(config)
    optimizer = torch.optim.AdamW(_parameter_groups(network, cfg.weight_decay), lr=cfg.learning_rate)
    n_items = len(train_set.items)
    batches_per_epoch = math.ceil(math.ceil(n_items / cfg.batch_size) / accelerator.num_processes)
    steps_per_epoch = math.ceil(batches_per_epoch / cfg.grad_accumulation)
    total_steps = steps_per_epoch * cfg.epochs
    scheduler = get_constant_schedule_with_warmup(optimizer, min(cfg.warmup_steps, total_steps))
    network, optimizer, scheduler = accelerator.prepare(network, optimizer, scheduler)
    questions = torch.from_numpy(train_set.questions).to(accelerator.device)
    chunks = torch.from_numpy(train_set.chunks).to(accelerator.device)

    state = TreeHopState()
    if resume and previous is not None:
        accelerator.load_state(str(previous))
        state = TreeHopState.read(previous)
        logger.info("resumed from %s at step %d (epoch %d)", previous, state.global_step, state.epoch)
    open_run_outputs(accelerator, trackers, cfg, out, state.global_step)
    if main:
        write_text_atomic(out / "training_data.json", json.dumps(train_set.info, indent=2))
    eval_settings = TreeHopRetrievalConfig(top_k=cfg.eval_top_k, hops=cfg.eval_hops)
    encoded_validation: dict[str, np.ndarray] = {}

    def evaluate_and_keep_best(epoch: int) -> None:
        model = TreeHop(accelerator.unwrap_model(network), accelerator.device)
        per_pool = search_scores(
            model, retrievers, validation, eval_settings, question_vectors=encoded_validation
        )
        network.train()
        score = protocol_score(per_pool)
        flat = {"score": score, **{f"{p}/{k}": v for p, s in per_pool.items() for k, v in s.items()}}
        state.last_eval_step = state.global_step
        if main:
            with JsonlAppender(out / "eval_log.jsonl") as log:
                log.write({"step": state.global_step, "epoch": epoch, **flat})
        accelerator.log({f"eval/{k}": v for k, v in flat.items()}, step=state.global_step)
        if state.best_score is None or score > state.best_score:
            state.best_score, state.best_step, state.best_metrics = score, state.global_step, flat
            state.best_epoch = epoch
            weights = accelerator.get_state_dict(network)
            if main:
                metrics = {"step": state.global_step, "epoch": epoch, "selection": SELECTION, **flat}
                model.save_pretrained(
                    out / "best",
                    state_dict=weights,
                    run_files={
                        "train_config.yaml": (out / "train_config.yaml").read_text(encoding="utf-8"),
                        "metrics.json": json.dumps(metrics, indent=2),
                    },
                )

    def save() -> None:
        save_last(accelerator, ckpt_root, state, extra={"total_steps": total_steps})

    train_log = JsonlAppender(out / "train_log.jsonl") if main else None
    progress = tqdm(
        total=total_steps,
        initial=state.global_step,
        desc="train treehop",
        disable=not (main and cfg.progress),
    )
    started, stopped = time.perf_counter(), False
    network.train()
    try:
        for epoch in range(state.epoch, cfg.epochs):
            order = np.random.default_rng(cfg.seed + epoch).permutation(n_items)
            batches = [order[i : i + cfg.batch_size] for i in range(0, n_items, cfg.batch_size)]
            mine = batches[accelerator.process_index :: accelerator.num_processes]
            skip = state.batches_in_epoch if epoch == state.epoch else 0
            state.epoch, state.batches_in_epoch = epoch, skip
            for rows in mine[skip:]:
                with accelerator.accumulate(network):
                    parts = chain_loss(
                        network,
                        questions,
                        chunks,
                        [train_set.items[int(i)] for i in rows],
                        temperature=cfg.temperature,
                        own=cfg.own_negatives,
                        in_batch=cfg.in_batch_negatives,
                    )
                    accelerator.backward(parts.loss)
                    if accelerator.sync_gradients and cfg.max_grad_norm > 0:
                        accelerator.clip_grad_norm_(network.parameters(), cfg.max_grad_norm)
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                state.batches_in_epoch += 1
                if not accelerator.sync_gradients:
                    continue
                scheduler.step()
                state.global_step += 1
                record = {
                    "step": state.global_step,
                    "epoch": epoch,
                    "loss": float(parts.loss.detach()),
                    "top1": parts.top1,
                    "targets": parts.targets,
                    "lr": float(scheduler.get_last_lr()[0]),
                }
                if train_log is not None:
                    train_log.write(record)
                accelerator.log(
                    {"train/loss": record["loss"], "train/top1": parts.top1}, step=state.global_step
                )
                progress.set_postfix(loss=f"{record['loss']:.3f}")
                progress.update(1)
                if cfg.stop_after_steps and state.global_step >= cfg.stop_after_steps:
                    stopped = True
                    break
            if stopped:
                save()
                break
            state.epoch, state.batches_in_epoch = epoch + 1, 0
            last = epoch + 1 == cfg.epochs
            if (epoch + 1) % cfg.eval_every_epochs == 0 or last:
                evaluate_and_keep_best(epoch + 1)
            if (epoch + 1) % cfg.save_every_epochs == 0 or last:
                save()
    finally:
        progress.close()
        if train_log is not None:
            train_log.close()
    seconds = time.perf_counter() - started
    if stopped:
        accelerator.end_training()
        return {"completed": False, "global_step": state.global_step, "epoch": state.epoch}
    state.completed = True
    save()
    final = {
        "completed": True,
        "global_step": state.global_step,
        "total_steps": total_steps,
        "epochs": cfg.epochs,
        "best_step": state.best_step,
        "best_epoch": state.best_epoch,
        "best_score": state.best_score,
        "best": state.best_metrics,
        "selection": SELECTION,
        "parameters": sum(p.numel() for p in accelerator.unwrap_model(network).parameters()),
        "train_seconds_this_session": seconds,
        "num_processes": accelerator.num_processes,
        "training_data": train_set.info,
    }
    if main:
        write_text_atomic(out / "final_metrics.json", json.dumps(final, indent=2))
    accelerator.end_training()
    return final


@dataclass
class TreeHopState(TrainerState):
    """The trainer state, plus the epoch the best checkpoint came from."""

    best_epoch: int | None = None


def open_pools(cfg: TreeHopTrainConfig) -> list[Pool]:
    """Every training file pooled into its own corpus with a dense index (built once, cached)."""
    from dataclasses import replace

    from efficientrag.experiment import ExperimentConfig, prepare_data
    from efficientrag.retrieval.factory import build_retriever

    pools = []
    for i, data in enumerate(cfg.train_sets):
        name = f"{i}-{data.dataset}"
        exp = ExperimentConfig(
            work_dir=str(Path(cfg.work_dir) / "pools" / name),
            data=data,
            retriever=replace(cfg.retriever, index_dir=None),
        )
        pooled = prepare_data(exp)
        retriever = build_retriever(exp.retriever, pooled.corpus, exp.index_dir, show_progress=cfg.progress)
        pools.append(Pool(name, pooled.corpus, list(pooled.examples), retriever))
    return pools


def _common_encoder(pools: Sequence[Pool]) -> IndexVectors:
    if not pools:
        raise ConfigError("no training pools")
    first = IndexVectors(pools[0].retriever)
    for pool in pools[1:]:
        other = IndexVectors(pool.retriever)
        if (other.encoder.name, other.dim, other.encoder.normalize) != (
            first.encoder.name,
            first.dim,
            first.encoder.normalize,
        ):
            raise ConfigError(
                f"training pools {pools[0].name!r} and {pool.name!r} were indexed with different encoders "
                f"({first.encoder.name}, dim {first.dim}) vs ({other.encoder.name}, dim {other.dim})"
            )
    return first


def _parameter_groups(network: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for name, param in network.named_parameters():
        (no_decay if param.ndim < 2 or "norm" in name else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _check_resumable(cfg: TreeHopTrainConfig, saved_path: Path) -> None:
    if not saved_path.is_file():
        return
    saved = to_dict(load_config(TreeHopTrainConfig, saved_path))
    now = to_dict(cfg)
    differs = [k for k in DATA_ORDER_KEYS if saved.get(k) != now.get(k)]
    if differs:
        raise ConfigError(
            f"cannot resume the run in {saved_path.parent}: {', '.join(differs)} changed since it started "
            "(these decide the data and its order)"
        )
