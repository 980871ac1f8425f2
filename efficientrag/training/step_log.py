"""One optimizer step's line of ``train_log.jsonl``: the mean losses of its micro-batches, the rows
they held and a hash of those rows' indices (two runs that see the same batches log the same
hashes, which is how a resumed run is checked against an uninterrupted one)."""

from __future__ import annotations

import zlib
from typing import Any

import torch
from accelerate import Accelerator

from efficientrag.training.checkpoint import TrainerState


class StepLosses:
    """Loss and rows of the micro-batches that make up one optimizer step."""

    def __init__(self) -> None:
        self.total = self.token = self.tag = 0.0
        self.divergence: float | None = None  # distillation only
        self.batches = 0
        self.rows = 0
        self.crc = 0

    def add(self, parts: Any, index: torch.Tensor) -> None:
        self.total += float(parts.total.detach())
        self.token += float(parts.token.detach())
        self.tag += float(parts.tag.detach()) if parts.tag is not None else 0.0
        if getattr(parts, "divergence", None) is not None:
            self.divergence = (self.divergence or 0.0) + float(parts.divergence.detach())
        self.batches += 1
        self.rows += int(index.numel())
        self.crc = zlib.crc32(index.cpu().numpy().astype("int64").tobytes(), self.crc)

    def record(self, state: TrainerState, lr: float, accelerator: Accelerator) -> dict[str, Any]:
        n = max(self.batches, 1)
        parts = [self.total / n, self.token / n, self.tag / n]
        if self.divergence is not None:
            parts.append(self.divergence / n)
        values = accelerator.reduce(torch.tensor(parts, device=accelerator.device), reduction="mean").tolist()
        loss, token, tag = values[:3]
        soft = {"divergence_loss": values[3]} if self.divergence is not None else {}
        return {
            "step": state.global_step,
            "epoch": state.epoch,
            "loss": loss,
            "token_loss": token,
            "tag_loss": tag,
            **soft,
            "lr": float(lr),
            "rows": self.rows,
            "batch_hash": f"{self.crc:08x}",
        }
