"""Everything the training loop needs before its first step, built in one fixed order.

The order is part of the results: the seed is set after the Accelerator exists and before the model's
heads are initialized, the loaders carry their own seeded generators, and a resumed run loads its
checkpoint (weights, optimizer, scheduler, RNG) only after ``accelerator.prepare``. Moving a line
here changes the weights a run produces.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from transformers import get_linear_schedule_with_warmup

from efficientrag.config import save_config
from efficientrag.config_values import to_dict
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models.card import TRAIN_CONFIG_FILE, TrainingRecord
from efficientrag.models.word_classifier import WordClassifier
from efficientrag.models.wrappers import WRAPPER_CLASSES
from efficientrag.training.checkpoint import TrainerState
from efficientrag.training.config import TrainConfig
from efficientrag.training.distill import DistillWeights
from efficientrag.training.encoded import EncodedDataset, positive_class_weights, prepare_split
from efficientrag.training.metrics import SELECTION_METRIC
from efficientrag.training.sampler import LengthGroupedBatchSampler
from efficientrag.training.trackers import available_trackers, start_trackers

logger = logging.getLogger(__name__)


def resolve_mixed_precision(setting: str) -> str:
    """``auto``: bf16 on GPUs that have it, fp16 on other GPUs, none on CPU."""
    if setting != "auto":
        return setting
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "no"


@dataclass
class TrainingRun:
    """One training session: the prepared objects, the schedule and the resumable ``state``."""

    cfg: TrainConfig
    out: Path
    accelerator: Accelerator
    mixed_precision: str
    model: WordClassifier  # the wrapper that saves the best folder; ``network`` is its prepared module
    network: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    sampler: LengthGroupedBatchSampler
    train_loader: DataLoader
    eval_loader: DataLoader
    class_weights: torch.Tensor | None
    data_info: dict[str, Any]
    total_steps: int
    steps_per_epoch: int
    num_epochs: int
    state: TrainerState
    main: bool  # the main process writes the files
    # Distillation: the frozen teacher network (on the device, not prepared: it never trains).
    teacher: torch.nn.Module | None = None

    @property
    def distill_weights(self) -> DistillWeights:
        cfg = self.cfg
        return DistillWeights(cfg.distill_temperature, cfg.distill_hard_weight, cfg.distill_soft_weight)

    @property
    def run_info(self) -> dict[str, int]:
        """The schedule, saved beside each checkpoint."""
        return {
            "total_steps": self.total_steps,
            "steps_per_epoch": self.steps_per_epoch,
            "num_epochs": self.num_epochs,
        }

    def training_record(self, metrics: dict[str, Any], step: int, completed: bool = False) -> TrainingRecord:
        """What the model card of a saved best folder says about this run."""
        return TrainingRecord(
            train_config=to_dict(self.cfg),
            metrics=metrics,
            step=step,
            total_steps=self.total_steps,
            data={k: self.data_info[k] for k in ("train_rows", "validation_rows", "skipped_rows")},
            selection_metric=SELECTION_METRIC[self.cfg.model],
            completed=completed,
        )


def setup_run(cfg: TrainConfig, resume_from: Path | None) -> TrainingRun:
    """Accelerator, model, data, loaders, optimizer and schedule, prepared; with ``resume_from`` (a
    checkpoint folder) the run's state as that checkpoint left it. Also writes the resolved config,
    cuts the logs back to the checkpoint, and starts the trackers."""
    out = Path(cfg.output_dir)
    mixed_precision = resolve_mixed_precision(cfg.mixed_precision)
    trackers = available_trackers(list(cfg.trackers))
    accelerator = Accelerator(
        mixed_precision=mixed_precision,
        gradient_accumulation_steps=cfg.grad_accumulation,
        log_with=trackers or None,
        project_dir=str(out),
        step_scheduler_with_optimizer=False,
    )
    main = accelerator.is_main_process
    if main:
        out.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)

    teacher, model = _load_models(cfg)
    with accelerator.main_process_first():  # one process tokenizes, the others read its cache
        train_ds, val_ds, data_info = _load_data(cfg, model, out, main)
    class_weights = _class_weights(cfg, train_ds)

    sampler, train_loader, eval_loader = _loaders(cfg, model, train_ds, val_ds, mixed_precision)

    optimizer = torch.optim.AdamW(
        parameter_groups(model.network, cfg.weight_decay), lr=cfg.learning_rate, eps=cfg.adam_epsilon
    )
    batches_per_epoch = math.ceil(len(sampler) / accelerator.num_processes)
    steps_per_epoch = math.ceil(batches_per_epoch / cfg.grad_accumulation)
    total_steps = cfg.max_steps or steps_per_epoch * cfg.epochs
    num_epochs = math.ceil(total_steps / steps_per_epoch)
    scheduler = get_linear_schedule_with_warmup(optimizer, min(cfg.warmup_steps, total_steps), total_steps)
    network, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(
        model.network, optimizer, train_loader, eval_loader, scheduler
    )

    state = TrainerState()
    if resume_from is not None:
        accelerator.load_state(str(resume_from))
        state = TrainerState.read(resume_from)
        logger.info(
            "resumed from %s at step %d (epoch %d, batch %d)",
            resume_from,
            state.global_step,
            state.epoch,
            state.batches_in_epoch,
        )
    open_run_outputs(accelerator, trackers, cfg, out, state.global_step)
    return TrainingRun(
        cfg=cfg,
        out=out,
        accelerator=accelerator,
        mixed_precision=mixed_precision,
        model=model,
        network=network,
        optimizer=optimizer,
        scheduler=scheduler,
        sampler=sampler,
        train_loader=train_loader,
        eval_loader=eval_loader,
        class_weights=class_weights,
        data_info=data_info,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
        num_epochs=num_epochs,
        state=state,
        main=main,
        teacher=teacher.network.to(accelerator.device) if teacher is not None else None,
    )


def _load_models(cfg: TrainConfig) -> tuple[Any, WordClassifier]:
    """The model to train, and the teacher it learns from when distilling (else None): a fresh
    backbone with new heads, a trained model to fine-tune (``init_from``), or the teacher with
    fewer layers (``teacher``, training/distill.py)."""
    wrapper = WRAPPER_CLASSES[cfg.model]
    if cfg.teacher:
        from efficientrag.training.distill import load_teacher_and_student

        return load_teacher_and_student(cfg.model, cfg.teacher, cfg.student_layers, cfg.student_depth)
    if cfg.init_from:  # its network, heads and tokenizer
        return None, wrapper.from_pretrained(cfg.init_from, device="cpu")
    model = wrapper.from_backbone(
        cfg.backbone,
        pooling=cfg.pooling,
        max_length=cfg.max_length,
        word_aggregation=cfg.word_aggregation,
        dropout=cfg.dropout,
        device="cpu",
    )
    return None, model


def _loaders(
    cfg: TrainConfig,
    model: WordClassifier,
    train_ds: EncodedDataset,
    val_ds: EncodedDataset,
    mixed_precision: str,
) -> tuple[LengthGroupedBatchSampler, DataLoader, DataLoader]:
    """Length-grouped, dynamically padded batches; the training order depends only on the seed and
    the epoch."""
    collate = model.collator(
        pad_to=cfg.max_length if cfg.pad_to_max_length else None, compat_labels=cfg.compat
    )
    if mixed_precision != "no" and not cfg.pad_to_max_length:
        collate.pad_to_multiple_of = 8
    sampler = LengthGroupedBatchSampler(
        train_ds.lengths, cfg.batch_size, seed=cfg.seed, group_by_length=cfg.group_by_length
    )
    # The loader's own generator keeps worker seeding off the global RNG, so a resumed run draws
    # the same dropout masks as an uninterrupted one.
    train_loader = DataLoader(
        train_ds,
        batch_sampler=sampler,
        collate_fn=collate,
        num_workers=cfg.num_workers,
        generator=torch.Generator().manual_seed(cfg.seed),
    )
    eval_loader = DataLoader(
        val_ds,
        batch_sampler=LengthGroupedBatchSampler(
            val_ds.lengths, cfg.per_device_eval_batch_size, seed=cfg.seed, shuffle=False
        ),
        collate_fn=collate,
        num_workers=cfg.num_workers,
    )
    return sampler, train_loader, eval_loader


def _load_data(
    cfg: TrainConfig, model: WordClassifier, out: Path, main: bool
) -> tuple[EncodedDataset, EncodedDataset, dict[str, Any]]:
    """Checked, tokenized splits from ``datasets``; a second run of the same config reads the cache."""
    prepared = {
        split: prepare_split(
            cfg.data_dir,
            split,
            cfg.model,
            model,
            max_length=cfg.max_length,
            limit=limit,
            max_bad_fraction=cfg.max_bad_row_fraction,
            cache_dir=cfg.cache_dir or None,
        )
        for split, limit in (("train", cfg.max_train_rows), ("validation", cfg.max_eval_rows))
    }
    skipped = [{"file": str(p.path), **s.to_dict()} for p in prepared.values() for s in p.skipped]
    if main:
        write_jsonl(out / "skipped_rows.jsonl", skipped)
        if skipped:
            logger.warning("skipped %d malformed rows (see %s)", len(skipped), out / "skipped_rows.jsonl")
    train_ds, val_ds = prepared["train"].dataset, prepared["validation"].dataset
    info = {
        "train_rows": len(train_ds),
        "validation_rows": len(val_ds),
        "skipped_rows": len(skipped),
        "train_truncation": train_ds.truncation_stats(),
        "validation_truncation": val_ds.truncation_stats(),
        "tokenized_cache": {s: {"file": p.cache_file, "hit": p.from_cache} for s, p in prepared.items()},
    }
    return train_ds, val_ds, info


def _class_weights(cfg: TrainConfig, train_ds: EncodedDataset) -> torch.Tensor | None:
    if cfg.class_weights is None:
        return None
    values = positive_class_weights([train_ds]) if cfg.class_weights == "auto" else list(cfg.class_weights)
    return torch.tensor(values, dtype=torch.float32)


def parameter_groups(network: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """No weight decay on biases and normalization weights (the usual transformer recipe)."""
    decay, no_decay = [], []
    for name, param in network.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim < 2 or "norm" in name.lower():
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def open_run_outputs(accelerator: Accelerator, trackers: list[str], cfg: Any, out: Path, step: int) -> None:
    """Save the resolved config, cut the logs back to ``step`` (a resumed run redoes what came
    after its checkpoint) and start the trackers. ``cfg``: any training config with the tracker
    fields (the Labeler/Filter's and TreeHop's)."""
    if accelerator.is_main_process:
        save_config(cfg, out / TRAIN_CONFIG_FILE)
        _trim_log(out / "train_log.jsonl", step)
        _trim_log(out / "eval_log.jsonl", step)
    start_trackers(
        accelerator,
        trackers,
        project=cfg.wandb_project,
        run_name=cfg.run_name,
        wandb_mode=cfg.wandb_mode,
        output_dir=out,
        config=to_dict(cfg),
    )


def _trim_log(path: Path, step: int) -> None:
    """Drop log lines written after the checkpoint we resume from (they will be redone)."""
    if not path.is_file():
        return
    kept = [r for r in read_jsonl(path, allow_torn_tail=True) if int(r.get("step", 0)) <= step]
    write_jsonl(path, kept)
