"""Training of the cross-encoder reranker that the ``rerank`` baseline loads.

A MiniLM (any Hugging Face encoder) with a fresh one-logit head, trained with sentence-transformers'
``CrossEncoderTrainer`` and ``BinaryCrossEntropyLoss`` on (question, chunk) pairs of the Labeler's
training questions (:mod:`efficientrag.training.reranker_pairs`): gold chunks are positives, hard
negatives come from the same search the method reranks. After every epoch the model reranks each
validation question's top ``eval_top_n`` hits and keeps ``eval_k``
(:mod:`efficientrag.training.reranker_validation`); the best epoch is kept. Run folder
(``output_dir``)::

    train_config.yaml      the resolved config
    checkpoints/           the trainer's checkpoint-<step>/ folders (the newest complete one resumes)
    best/                  the best epoch in the CrossEncoder layout (config.json, model.safetensors,
                           tokenizer, modules.json, README.md) + metrics.json and train_config.yaml:
                           ``sentence_transformers.CrossEncoder(path)`` loads it anywhere
    train_log.jsonl        the loss and learning rate every few steps
    eval_log.jsonl         one line per validation (score, recall and all-gold per training file)
    final_metrics.json     written when training completes

The pools (each training file with its search) come from the caller: the training script
(:func:`efficientrag.experiment.pools.open_pools`) or a benchmark that shares its own.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efficientrag.atomic import write_text_atomic
from efficientrag.config import save_config
from efficientrag.errors import ConfigError
from efficientrag.hub import hub_offline, resolve_model_path
from efficientrag.models.card import TRAIN_CONFIG_FILE
from efficientrag.training.pool import Pool, require_pools
from efficientrag.training.reranker_callbacks import KeepBest, StepLog, StopAfter, quiet_console, trim_logs
from efficientrag.training.reranker_checkpoints import (
    FINAL_METRICS,
    checkpoint_step,
    checkpoint_to_resume,
    completed_metrics,
)
from efficientrag.training.reranker_config import RerankerTrainConfig
from efficientrag.training.reranker_pairs import training_pairs, validation_examples
from efficientrag.training.reranker_validation import RerankValidation
from efficientrag.training.trackers import available_trackers

logger = logging.getLogger(__name__)

SELECTION = "mean over training files of (recall + all-gold) / 2 at eval_k, reranking the top eval_top_n"
LOG_EVERY = 10  # optimizer steps between train_log.jsonl lines


def train_reranker(
    cfg: RerankerTrainConfig, *, resume: bool = False, pools: Sequence[Pool] | None = None
) -> dict[str, Any]:
    """Train (or resume, or return the metrics of a finished run) and return the final metrics
    (also written to ``final_metrics.json``).

    Args:
        cfg: The run's settings.
        resume: Continue from the newest complete checkpoint (weights, optimizer, scheduler, RNG,
            data position); a completed run returns its metrics without training again.
        pools: The training files with their searches; build them from ``cfg`` with
            :func:`efficientrag.experiment.pools.open_pools`.

    Returns:
        The final metrics; ``{"completed": False, ...}`` when ``cfg.stop_after_steps`` ended the
        session early.

    Raises:
        ConfigError: No pools, a backbone that cannot be loaded offline, a fresh run into a folder
            holding a checkpoint, or a resumed run whose data settings changed.
    """
    pools = require_pools(pools, "train_reranker")
    out = Path(cfg.output_dir)
    checkpoint = checkpoint_to_resume(cfg, out, resume)
    if checkpoint is not None and (done := completed_metrics(out)) is not None:
        logger.info("run in %s is already complete; nothing to do", out)
        return done
    backbone = backbone_path(cfg.backbone)
    rows, pairs_info = training_pairs(pools, cfg)
    evaluator = RerankValidation(
        pools,
        {p.name: validation_examples(p, cfg) for p in pools},
        top_n=cfg.eval_top_n,
        k=cfg.eval_k,
        batch_size=cfg.eval_batch_size,
        progress=cfg.progress,
    )
    out.mkdir(parents=True, exist_ok=True)
    save_config(cfg, out / TRAIN_CONFIG_FILE)
    best = trim_logs(out, checkpoint_step(checkpoint))
    callbacks = [
        KeepBest(
            out, [p.name for p in pools], lambda folder: save_config(cfg, folder / TRAIN_CONFIG_FILE), best
        ),
        StepLog(out),
        StopAfter(cfg.stop_after_steps),
    ]
    trainer = _trainer(cfg, new_cross_encoder(cfg, backbone), rows, evaluator, callbacks)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    step_log, stop = callbacks[1], callbacks[2]
    session = {"session_steps": step_log.session_steps, "train_runtime_s": round(step_log.train_seconds, 2)}
    if stop.stopped:
        return {"completed": False, "global_step": trainer.state.global_step, **session}
    return _finish(cfg, trainer, evaluator, pairs_info, session)


def backbone_path(name: str) -> str:
    """The backbone as ``CrossEncoder`` loads it: a local folder, the packaged MiniLM for its
    aliases, or a Hub name where the Hub may be reached; checked before any pair is mined."""
    try:
        path = resolve_model_path(name)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"config 'backbone': {exc}") from exc
    if not Path(path).is_dir() and hub_offline():
        raise ConfigError(
            f"config 'backbone': {name!r} is not a local folder and HF_HUB_OFFLINE is set; give a folder "
            "or sentence-transformers/all-MiniLM-L6-v2 (the packaged offline MiniLM)"
        )
    return path


def new_cross_encoder(cfg: RerankerTrainConfig, backbone: str) -> Any:
    """A ``CrossEncoder`` over ``backbone`` with a fresh one-logit head, seeded by ``cfg.seed``."""
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder.model_card import CrossEncoderModelCardData
    from transformers import set_seed

    set_seed(cfg.seed)  # the head's initialization
    return CrossEncoder(
        backbone,
        num_labels=1,
        max_length=cfg.max_length,
        trust_remote_code=False,
        local_files_only=hub_offline(),
        # The model card never looks the base model or the data up on the Hub.
        model_card_data=CrossEncoderModelCardData(local_files_only=True),
    )


def _trainer(cfg: RerankerTrainConfig, model: Any, rows: list[dict], evaluator: Any, callbacks: list) -> Any:
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    trackers = available_trackers(cfg.trackers)
    if "wandb" in trackers:
        os.environ.setdefault("WANDB_MODE", "offline")  # a tracker never reaches the network unasked
    args = CrossEncoderTrainingArguments(
        output_dir=str(Path(cfg.output_dir) / "checkpoints"),
        num_train_epochs=cfg.epochs,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.eval_batch_size,
        learning_rate=cfg.learning_rate,
        warmup_steps=cfg.warmup_ratio,  # a float below 1 is a share of the steps
        weight_decay=cfg.weight_decay,
        fp16=cfg.mixed_precision == "fp16",
        bf16=cfg.mixed_precision == "bf16",
        seed=cfg.seed,
        eval_strategy="epoch",
        save_strategy="epoch",
        save_total_limit=1,
        logging_steps=LOG_EVERY,
        disable_tqdm=not cfg.progress,
        report_to=trackers or "none",
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    data = Dataset.from_dict(
        {
            "question": [r["question"] for r in rows],
            "text": [r["text"] for r in rows],
            "label": [float(r["label"]) for r in rows],
        }
    )
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=data,
        loss=BinaryCrossEntropyLoss(model),
        evaluator=evaluator,
        callbacks=callbacks,
    )
    quiet_console(trainer, cfg.progress)
    return trainer


def _finish(
    cfg: RerankerTrainConfig, trainer: Any, evaluator: RerankValidation, pairs: dict, session: dict
) -> dict[str, Any]:
    out = Path(cfg.output_dir)
    best_path = out / "best" / "metrics.json"
    best = json.loads(best_path.read_text(encoding="utf-8")) if best_path.is_file() else {}
    final = {
        "completed": True,
        "backbone": cfg.backbone,
        "global_step": trainer.state.global_step,
        "epochs": cfg.epochs,
        "selection_metric": SELECTION,
        "eval_top_n": cfg.eval_top_n,
        "eval_k": cfg.eval_k,
        "best_epoch": best.get("epoch"),
        "best_step": best.get("step"),
        "best_score": best.get("score"),
        "best": best.get("pools", {}),
        "direct": evaluator.direct(),
        "pairs": pairs,
        **session,
    }
    if trainer.is_world_process_zero():
        write_text_atomic(out / FINAL_METRICS, json.dumps(final, indent=2))
    return final
