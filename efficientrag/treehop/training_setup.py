"""Everything TreeHop's training loop needs before its first step, built in one fixed order.

As for the Labeler (:mod:`efficientrag.training.setup`), the order is part of the results: the
training vectors are cached and split first, the seed is set after the Accelerator exists and before
the network is initialized, and a resumed run loads its checkpoint (weights, optimizer, scheduler,
RNG) only after ``accelerator.prepare``. Moving a line here changes the weights a run produces.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import get_constant_schedule_with_warmup

from efficientrag.atomic import write_text_atomic
from efficientrag.data.schema import Example
from efficientrag.errors import ConfigError
from efficientrag.training.checkpoint import TrainerState, last_checkpoint, resume_point
from efficientrag.training.pool import Pool
from efficientrag.training.setup import open_run_outputs, parameter_groups, resolve_mixed_precision
from efficientrag.training.trackers import available_trackers
from efficientrag.treehop.config import DATA_ORDER_KEYS, TreeHopRetrievalConfig, TreeHopTrainConfig
from efficientrag.treehop.configuration import TreeHopConfig
from efficientrag.treehop.modeling import TreeHopNetwork
from efficientrag.treehop.training_data import TrainingSet, build_training_sets
from efficientrag.treehop.vectors import IndexVectors

logger = logging.getLogger(__name__)


@dataclass
class TreeHopState(TrainerState):
    """The trainer state, plus the epoch the best checkpoint came from."""

    best_epoch: int | None = None


@dataclass
class TreeHopRun:
    """One TreeHop training session: the prepared objects, the data, the schedule and the ``state``."""

    cfg: TreeHopTrainConfig
    out: Path
    accelerator: Accelerator
    network: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    train_set: TrainingSet
    questions: torch.Tensor  # every training question's vector, on the device
    chunks: torch.Tensor  # every training chunk's vector, on the device
    validation: dict[str, list[Example]]  # per pool: the questions that choose the checkpoint
    retrievers: dict[str, Any]  # per pool: its dense index, for the validation search
    total_steps: int
    state: TreeHopState
    main: bool  # the main process writes the files
    eval_settings: TreeHopRetrievalConfig
    # Pool -> its validation questions' vectors, encoded at the first evaluation and reused.
    encoded_validation: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def checkpoints(self) -> Path:
        return self.out / "checkpoints"


def checkpoint_to_resume(cfg: TreeHopTrainConfig, out: Path, resume: bool) -> Path | None:
    """The checkpoint a resumed run continues from; refuses a fresh run into a folder that already
    holds one, and a resumed run whose data or order settings changed."""
    previous = last_checkpoint(out / "checkpoints")
    return resume_point(previous, cfg, out, resume, keys=DATA_ORDER_KEYS, decides="the data and its order")


def completed(checkpoint: Path, out: Path) -> bool:
    return TreeHopState.read(checkpoint).completed and (out / "final_metrics.json").is_file()


def setup_treehop_run(cfg: TreeHopTrainConfig, pools: Sequence[Pool], resume_from: Path | None) -> TreeHopRun:
    """Training vectors, Accelerator, network, optimizer and schedule, prepared; with
    ``resume_from`` (a checkpoint folder) the state as that checkpoint left it. Also writes the
    resolved config and ``training_data.json``, cuts the logs back to the checkpoint, and starts
    the trackers."""
    out = Path(cfg.output_dir)
    encoder = common_encoder(pools)
    train_set, validation = _training_data(cfg, pools)
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
    network = TreeHopNetwork(_network_config(cfg, encoder))
    optimizer = torch.optim.AdamW(parameter_groups(network, cfg.weight_decay), lr=cfg.learning_rate)
    batches_per_epoch = math.ceil(
        math.ceil(len(train_set.items) / cfg.batch_size) / accelerator.num_processes
    )
    total_steps = math.ceil(batches_per_epoch / cfg.grad_accumulation) * cfg.epochs
    scheduler = get_constant_schedule_with_warmup(optimizer, min(cfg.warmup_steps, total_steps))
    network, optimizer, scheduler = accelerator.prepare(network, optimizer, scheduler)

    state = TreeHopState()
    if resume_from is not None:
        accelerator.load_state(str(resume_from))
        state = TreeHopState.read(resume_from)
        logger.info("resumed from %s at step %d (epoch %d)", resume_from, state.global_step, state.epoch)
    open_run_outputs(accelerator, trackers, cfg, out, state.global_step)
    if main:
        write_text_atomic(out / "training_data.json", json.dumps(train_set.info, indent=2))
    return TreeHopRun(
        cfg=cfg,
        out=out,
        accelerator=accelerator,
        network=network,
        optimizer=optimizer,
        scheduler=scheduler,
        train_set=train_set,
        questions=torch.from_numpy(train_set.questions).to(accelerator.device),
        chunks=torch.from_numpy(train_set.chunks).to(accelerator.device),
        validation=validation,
        retrievers={p.name: p.retriever for p in pools},
        total_steps=total_steps,
        state=state,
        main=main,
        eval_settings=TreeHopRetrievalConfig(top_k=cfg.eval_top_k, hops=cfg.eval_hops),
    )


def _training_data(
    cfg: TreeHopTrainConfig, pools: Sequence[Pool]
) -> tuple[TrainingSet, dict[str, list[Example]]]:
    """The training side of every pool (cut to ``max_train_questions``) and the validation side."""
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
    return train_set, validation


def _network_config(cfg: TreeHopTrainConfig, encoder: IndexVectors) -> TreeHopConfig:
    """A new network's widths from the config; its input width and encoder from the index."""
    return TreeHopConfig(
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


def common_encoder(pools: Sequence[Pool]) -> IndexVectors:
    """The encoder every pool was indexed with; pools indexed with different encoders are refused
    (one network maps vectors of one space)."""
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
