"""Evaluation counts: word-level P/R/F1 of the positive token class, tag accuracy and F1.

Token metrics are per *word* (the unit the pipeline consumes), with sub-word probabilities mapped
to words the same way prediction does; words cut by truncation count as predicted negative.
Tag F1 takes Continue as the positive class: it is the decision that keeps a chunk and searches on.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class BinaryCounts:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, pred: torch.Tensor, gold: torch.Tensor) -> None:
        pred = pred.bool()
        gold = gold.bool()
        self.tp += int((pred & gold).sum())
        self.fp += int((pred & ~gold).sum())
        self.fn += int((~pred & gold).sum())
        self.tn += int((~pred & ~gold).sum())

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def accuracy(self) -> float:
        total = self.tp + self.fp + self.fn + self.tn
        return (self.tp + self.tn) / total if total else 0.0

    def report(self, prefix: str) -> dict[str, float]:
        return {
            f"{prefix}_precision": self.precision,
            f"{prefix}_recall": self.recall,
            f"{prefix}_f1": self.f1,
            f"{prefix}_accuracy": self.accuracy,
        }


def selection_score(metrics: dict[str, float], kind: str) -> float:
    """What "best" means: token F1 (Filter); mean of token F1 and tag F1 (Labeler)."""
    if kind == "labeler":
        return (metrics["token_f1"] + metrics["tag_f1"]) / 2.0
    return metrics["token_f1"]


SELECTION_METRIC = {"labeler": "mean(token_f1, tag_f1)", "filter": "token_f1"}
