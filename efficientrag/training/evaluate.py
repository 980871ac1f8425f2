"""The evaluation pass of the training loop: word-level token scores, tag scores and loss on the
validation split, gathered across processes, and the run's selection score."""

from __future__ import annotations

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from efficientrag.models.inputs import IGNORE_INDEX, TAG_CONTINUE, TAGS
from efficientrag.models.modeling import MODEL_INPUTS, compute_loss
from efficientrag.models.tokenization import word_scores
from efficientrag.training.config import TrainConfig
from efficientrag.training.metrics import BinaryCounts, selection_score

CONTINUE = TAGS.index(TAG_CONTINUE)


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
