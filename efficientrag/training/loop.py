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
import math
import resource
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from efficientrag.config import ConfigError, load_config, save_config, to_dict
from efficientrag.jsonl import JsonlAppender, read_jsonl, write_jsonl
from efficientrag.models.base import WordClassifier
from efficientrag.models.batching import IGNORE_INDEX
from efficientrag.models.card import TRAIN_CONFIG_FILE, TrainingRecord, write_model_card
from efficientrag.models.filter import Filter
from efficientrag.models.inputs import TAG_CONTINUE, TAGS
from efficientrag.models.labeler import Labeler
from efficientrag.models.losses import compute_loss
from efficientrag.models.network import MODEL_INPUTS
from efficientrag.models.word_scores import word_scores
from efficientrag.training.checkpoint import TrainerState, last_checkpoint, save_last
from efficientrag.training.config import DATA_ORDER_KEYS, MODEL_KINDS, TrainConfig
from efficientrag.training.encoded import EncodedDataset, positive_class_weights, prepare_split
from efficientrag.training.metrics import SELECTION_METRIC, BinaryCounts, selection_score
from efficientrag.training.sampler import LengthGroupedBatchSampler
from efficientrag.training.trackers import available_trackers, start_trackers

logger = logging.getLogger(__name__)

MODEL_CLASSES: dict[str, type[WordClassifier]] = {"labeler": Labeler, "filter": Filter}
CONTINUE = TAGS.index(TAG_CONTINUE)


def resolve_mixed_precision(setting: str) -> str:
    """``auto``: bf16 on GPUs that have it, fp16 on other GPUs, none on CPU."""
    if setting != "auto":
        return setting
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "no"


def train(cfg: TrainConfig, *, resume: bool = False) -> dict[str, Any]:
    """Train ``cfg.model`` and return the final metrics (also written to ``final_metrics.json``).

    With ``resume=True`` the run continues from ``checkpoints/last`` (model, optimizer, scheduler,
    RNG, data position); a completed run returns its metrics without training again.
    """
    if cfg.model not in MODEL_KINDS:
        raise ConfigError(f"config 'model' must be one of {MODEL_KINDS}, got {cfg.model!r}")
    if not cfg.data_dir:
        raise ConfigError("config 'data_dir' is required (a folder with train.jsonl and validation.jsonl)")
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
        state = TrainerState.read(previous)
        if state.completed and (out / "final_metrics.json").is_file():
            logger.info("run in %s is already complete; nothing to do", out)
            return json.loads((out / "final_metrics.json").read_text(encoding="utf-8"))
    elif resume:
        logger.warning("--resume given but %s has no checkpoint; starting a new run", ckpt_root)

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

    if cfg.init_from:
        model = MODEL_CLASSES[cfg.model].from_pretrained(cfg.init_from, device="cpu")
    else:
        model = MODEL_CLASSES[cfg.model].from_backbone(
            cfg.backbone,
            pooling=cfg.pooling,
            max_length=cfg.max_length,
            word_aggregation=cfg.word_aggregation,
            dropout=cfg.dropout,
            device="cpu",
        )
    with accelerator.main_process_first():  # one process tokenizes, the others read its cache
        train_ds, val_ds, data_info = _load_data(cfg, model, out, main)
    class_weights = _class_weights(cfg, train_ds)

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

    network = model.network
    optimizer = torch.optim.AdamW(
        _parameter_groups(network, cfg.weight_decay), lr=cfg.learning_rate, eps=cfg.adam_epsilon
    )
    batches_per_epoch = math.ceil(len(sampler) / accelerator.num_processes)
    steps_per_epoch = math.ceil(batches_per_epoch / cfg.grad_accumulation)
    total_steps = cfg.max_steps or steps_per_epoch * cfg.epochs
    num_epochs = math.ceil(total_steps / steps_per_epoch)
    scheduler = get_linear_schedule_with_warmup(optimizer, min(cfg.warmup_steps, total_steps), total_steps)
    network, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(
        network, optimizer, train_loader, eval_loader, scheduler
    )

    state = TrainerState()
    if resume and previous is not None:
        accelerator.load_state(str(previous))
        state = TrainerState.read(previous)
        logger.info(
            "resumed from %s at step %d (epoch %d, batch %d)",
            previous,
            state.global_step,
            state.epoch,
            state.batches_in_epoch,
        )
    if main:
        save_config(cfg, out / "train_config.yaml")
        _trim_log(out / "train_log.jsonl", state.global_step)
        _trim_log(out / "eval_log.jsonl", state.global_step)
    start_trackers(
        accelerator,
        trackers,
        project=cfg.wandb_project,
        run_name=cfg.run_name,
        wandb_mode=cfg.wandb_mode,
        output_dir=out,
        config=to_dict(cfg),
    )
    run_info = {"total_steps": total_steps, "steps_per_epoch": steps_per_epoch, "num_epochs": num_epochs}

    def training_record(metrics: dict[str, Any], step: int, completed: bool = False) -> TrainingRecord:
        return TrainingRecord(
            train_config=to_dict(cfg),
            metrics=metrics,
            step=step,
            total_steps=total_steps,
            data={k: data_info[k] for k in ("train_rows", "validation_rows", "skipped_rows")},
            selection_metric=SELECTION_METRIC[cfg.model],
            completed=completed,
        )

    def evaluate_and_keep_best() -> dict[str, float]:
        metrics = evaluate(accelerator, network, eval_loader, cfg, class_weights)
        state.last_eval_step = state.global_step
        score = metrics["score"]
        if main:
            with JsonlAppender(out / "eval_log.jsonl") as log:
                log.write({"step": state.global_step, "epoch": state.epoch, **metrics})
        accelerator.log({f"eval/{k}": v for k, v in metrics.items()}, step=state.global_step)
        if state.best_score is None or score > state.best_score:
            state.best_score, state.best_step, state.best_metrics = score, state.global_step, metrics
            weights = accelerator.get_state_dict(network)
            if main:
                best = model.save_pretrained(
                    out / "best", state_dict=weights, training=training_record(metrics, state.global_step)
                )
                save_config(cfg, best / TRAIN_CONFIG_FILE)
                (best / "metrics.json").write_text(
                    json.dumps({"step": state.global_step, **metrics}, indent=2), encoding="utf-8"
                )
        return metrics

    def save() -> None:
        save_last(accelerator, ckpt_root, state, extra=run_info)

    train_log = JsonlAppender(out / "train_log.jsonl") if main else None
    progress = tqdm(total=total_steps, initial=state.global_step, desc=f"train {cfg.model}", disable=not main)
    train_seconds = 0.0
    session_samples = 0
    stopped_early = False
    network.train()
    running = _Running()
    try:
        for epoch in range(state.epoch, num_epochs):
            # Accelerate's loader re-seeds the batch sampler with its own epoch counter on every
            # iteration; set that counter too, or a resumed run would replay the wrong epoch.
            sampler.set_epoch(epoch)
            if hasattr(train_loader, "set_epoch"):
                train_loader.set_epoch(epoch)
            skip = state.batches_in_epoch if epoch == state.epoch else 0
            state.epoch, state.batches_in_epoch = epoch, skip
            loader: Iterable[dict[str, torch.Tensor]] = (
                accelerator.skip_first_batches(train_loader, skip) if skip else train_loader
            )
            tick = time.perf_counter()
            for batch in loader:
                with accelerator.accumulate(network):
                    outputs = network(**{k: batch[k] for k in MODEL_INPUTS if k in batch})
                    parts = compute_loss(outputs, batch, compat=cfg.compat, class_weights=class_weights)
                    accelerator.backward(parts.total)
                    if accelerator.sync_gradients and cfg.max_grad_norm > 0:
                        accelerator.clip_grad_norm_(network.parameters(), cfg.max_grad_norm)
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                state.batches_in_epoch += 1
                running.add(parts, batch["index"])
                if not accelerator.sync_gradients:
                    continue
                scheduler.step()
                state.global_step += 1
                step_samples = accelerator.gather(torch.tensor([running.rows], device=accelerator.device))
                state.samples_seen += int(step_samples.sum())
                session_samples += int(step_samples.sum())
                train_seconds += time.perf_counter() - tick
                record = running.record(state, scheduler.get_last_lr()[0], accelerator)
                if train_log is not None:
                    train_log.write(record)
                if state.global_step % max(cfg.logging_steps, 1) == 0:
                    accelerator.log(
                        {f"train/{k}": v for k, v in record.items() if isinstance(v, float)},
                        step=state.global_step,
                    )
                    progress.set_postfix(loss=f"{record['loss']:.4f}")
                running = _Running()
                progress.update(1)
                if cfg.eval_steps and state.global_step % cfg.eval_steps == 0:
                    evaluate_and_keep_best()
                done = state.global_step >= total_steps
                stop = bool(cfg.stop_after_steps) and state.global_step >= cfg.stop_after_steps and not done
                if (cfg.save_steps and state.global_step % cfg.save_steps == 0) or stop:
                    save()
                if done or stop:
                    stopped_early = stop
                    break
                tick = time.perf_counter()
            else:
                state.epoch, state.batches_in_epoch = epoch + 1, 0
                if not cfg.eval_steps and state.last_eval_step != state.global_step:
                    evaluate_and_keep_best()
                save()
                continue
            break
    finally:
        progress.close()
        if train_log is not None:
            train_log.close()

    session = {
        "train_runtime_s": train_seconds,
        "train_samples_per_second": session_samples / train_seconds if train_seconds > 0 else 0.0,
        "session_samples": session_samples,
        **_peak_memory(),
    }
    if stopped_early:
        accelerator.end_training()
        return {"completed": False, "global_step": state.global_step, "epoch": state.epoch, **session}

    if state.last_eval_step != state.global_step:
        evaluate_and_keep_best()
    state.completed = True
    save()
    final = {
        "completed": True,
        "model": cfg.model,
        "backbone": cfg.backbone,
        "global_step": state.global_step,
        "total_steps": total_steps,
        "epochs": num_epochs,
        "samples_seen": state.samples_seen,
        "selection_metric": SELECTION_METRIC[cfg.model],
        "best_step": state.best_step,
        "best_score": state.best_score,
        "best": state.best_metrics,
        "final_eval": _last_eval(out) if main else {},
        "mixed_precision": mixed_precision,
        "num_processes": accelerator.num_processes,
        "compat": cfg.compat,
        "class_weights": class_weights.tolist() if class_weights is not None else None,
        **data_info,
        **session,
    }
    if main:
        (out / "final_metrics.json").write_text(json.dumps(final, indent=2), encoding="utf-8")
        if state.best_step is not None and (out / "best").is_dir():
            # The card now says the run completed, and how far it went.
            write_model_card(
                out / "best",
                model.config,
                training_record(state.best_metrics, state.best_step, completed=True),
            )
    accelerator.end_training()
    return final


def evaluate(
    accelerator: Accelerator,
    network: torch.nn.Module,
    loader: DataLoader,
    cfg: TrainConfig,
    class_weights: torch.Tensor | None,
) -> dict[str, float]:
    """Word-level token P/R/F1 (positive class), tag accuracy/F1 (Continue positive), mean loss."""
    network.eval()
    tokens, tags = BinaryCounts(), BinaryCounts()
    loss_sum, loss_batches = 0.0, 0
    has_tags = False
    bar = tqdm(loader, desc="eval", leave=False, disable=not accelerator.is_main_process)
    with torch.no_grad():
        for batch in bar:
            outputs = network(**{k: batch[k] for k in MODEL_INPUTS if k in batch})
            parts = compute_loss(outputs, batch, compat=cfg.compat, class_weights=class_weights)
            loss_sum += float(accelerator.gather(parts.total.detach().reshape(1)).mean())
            loss_batches += 1
            probs = outputs["token_logits"].float().softmax(-1)[..., 1]
            gold = batch["word_labels"]
            scores = word_scores(probs, batch["word_ids"], gold.shape[1], cfg.word_aggregation)
            scores = accelerator.pad_across_processes(scores, dim=1, pad_index=0.0)
            gold = accelerator.pad_across_processes(gold, dim=1, pad_index=IGNORE_INDEX)
            scores, gold = accelerator.gather_for_metrics((scores, gold))
            counted = gold != IGNORE_INDEX
            tokens.add((scores >= cfg.eval_threshold)[counted], (gold == 1)[counted])
            if "tag_logits" in outputs:
                has_tags = True
                pred, truth = accelerator.gather_for_metrics(
                    (outputs["tag_logits"].argmax(-1), batch["tags"])
                )
                tags.add(pred == CONTINUE, truth == CONTINUE)
    network.train()
    metrics = {"loss": loss_sum / max(loss_batches, 1), **tokens.report("token")}
    if has_tags:
        metrics.update(tags.report("tag"))
    metrics["score"] = selection_score(metrics, cfg.model)
    return metrics


class _Running:
    """Loss and rows of the micro-batches that make up one optimizer step."""

    def __init__(self) -> None:
        self.total = self.token = self.tag = 0.0
        self.batches = 0
        self.rows = 0
        self.crc = 0

    def add(self, parts: Any, index: torch.Tensor) -> None:
        self.total += float(parts.total.detach())
        self.token += float(parts.token.detach())
        self.tag += float(parts.tag.detach()) if parts.tag is not None else 0.0
        self.batches += 1
        self.rows += int(index.numel())
        self.crc = zlib.crc32(index.cpu().numpy().astype("int64").tobytes(), self.crc)

    def record(self, state: TrainerState, lr: float, accelerator: Accelerator) -> dict[str, Any]:
        n = max(self.batches, 1)
        values = torch.tensor([self.total / n, self.token / n, self.tag / n], device=accelerator.device)
        loss, token, tag = accelerator.reduce(values, reduction="mean").tolist()
        return {
            "step": state.global_step,
            "epoch": state.epoch,
            "loss": loss,
            "token_loss": token,
            "tag_loss": tag,
            "lr": float(lr),
            "rows": self.rows,
            "batch_hash": f"{self.crc:08x}",
        }


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


def _parameter_groups(network: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
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


def _check_resumable(cfg: TrainConfig, saved_path: Path) -> None:
    if not saved_path.is_file():
        return
    saved = load_config(TrainConfig, saved_path)
    differs = [k for k in DATA_ORDER_KEYS if getattr(saved, k) != getattr(cfg, k)]
    if differs:
        detail = ", ".join(f"{k}: {getattr(saved, k)!r} -> {getattr(cfg, k)!r}" for k in differs)
        raise ConfigError(
            f"cannot resume the run in {saved_path.parent}: {detail} changed since it started "
            "(these decide the data order and the schedule)"
        )


def _trim_log(path: Path, step: int) -> None:
    """Drop log lines written after the checkpoint we resume from (they will be redone)."""
    if not path.is_file():
        return
    kept = [r for r in read_jsonl(path, allow_torn_tail=True) if int(r.get("step", 0)) <= step]
    write_jsonl(path, kept)


def _last_eval(out: Path) -> dict[str, Any]:
    path = out / "eval_log.jsonl"
    records = list(read_jsonl(path, allow_torn_tail=True)) if path.is_file() else []
    return records[-1] if records else {}


def _peak_memory() -> dict[str, float]:
    peak = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    if torch.cuda.is_available():
        peak["peak_gpu_memory_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return peak
