"""Fitting the Labeler's exit heads on the Labeler's own outputs (:mod:`efficientrag.models.early_exit`).

The heads learn to predict what the trained Labeler says, not the gold labels: each stands in for
the Labeler's remaining layers, so the target is the full Labeler's Continue logit for each training
pair. One staged pass of the Labeler over the rows gives every head's input (the pooled states after
its layer) and the common target (the tag head's logit after all of them), from the same stages
prediction runs. Each head has two outputs: the expected logit (squared error) and an upper quantile
of it (the pinball loss at ``quantile``), which the exit decision reads. The Labeler's weights are
not touched; the heads are small networks fit in seconds on the stored features, so the cost is
that one pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from efficientrag.errors import EfficientRAGError
from efficientrag.fingerprint import file_digest
from efficientrag.models.early_exit import (
    EARLY_EXIT_DIR,
    LOGIT_CLIP,
    MEAN,
    UPPER,
    EarlyExit,
    ExitHead,
    StagedEncoder,
    check_split,
    load_early_exit,
)
from efficientrag.models.inputs import TAG_TERMINATE, LabelerRow
from efficientrag.models.modeling import MODEL_INPUTS, pool_states
from efficientrag.setting_fields import SettingError, bounded, check_settings
from efficientrag.text.words import split_words

# Thresholds the fit report shows: per exit layer, the share of held-out pairs each would let leave
# there, and how many of the pairs the full Labeler tags Continue among them.
REPORTED_THRESHOLDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


@dataclass
class ExitHeadConfig:
    """How the exit heads are fit.

    Attributes:
        layers: One head after each of these encoder layers (increasing, at least 1, fewer than
            the encoder's depth): a pair leaves at the first where it may, so a low layer makes an
            exit cheap and a higher one catches what the low one was unsure of.
        quantile: The quantile of the full Labeler's logit the upper output is fit to, in (0, 1):
            the higher, the surer a pair must be to leave.
        hidden: Each head's hidden width.
        epochs: Passes over the stored features.
        learning_rate: AdamW's learning rate.
        batch_size: Features per optimizer step.
        predict_batch_size: Pairs per Labeler forward pass while the features are collected.
        held_out: Share of the rows kept out of the fit to measure it, in [0, 1).
        max_rows: Rows used at most (0: all).
        seed: Seed of the shuffle, the held-out split and the heads' initial weights.
    """

    layers: list[int] = field(default_factory=lambda: [2, 4])
    quantile: float = bounded(0.9, above=0.0, below=1.0)
    hidden: int = bounded(256, low=1)
    epochs: int = bounded(60, low=1)
    learning_rate: float = bounded(1e-3, above=0.0)
    batch_size: int = bounded(256, low=1)
    predict_batch_size: int = bounded(32, low=1)
    held_out: float = bounded(0.1, low=0.0, below=1.0)
    max_rows: int = bounded(0, low=0)
    seed: int = 0

    def __post_init__(self) -> None:
        check_settings(self)
        layers = list(self.layers) if isinstance(self.layers, (list, tuple)) else None
        if (
            not layers
            or layers != sorted(set(layers))
            or not all(isinstance(x, int) and x >= 1 for x in layers)
        ):
            raise SettingError(
                f"layers must be increasing encoder layers, each at least 1, got {self.layers!r}",
                fields=("layers",),
            )


def collect_features(
    labeler,
    rows: Sequence[LabelerRow],
    layers: Sequence[int],
    *,
    batch_size: int = 32,
    show_progress: bool = False,
) -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    """The pooled states after each of ``layers`` and the full Labeler's Continue logit, per row.

    Args:
        labeler: The trained Labeler (float, on any device).
        rows: Labeler rows (their query and chunk words; their labels are not read).
        layers: The exit layers.
        batch_size: Pairs per forward pass.
        show_progress: Show a progress bar.

    Returns:
        ``(features, logits)``: per layer (rows, width), and (rows,), float32 on the CPU, in row order.
    """
    network = labeler.network
    check_split(network, layers)
    staged = StagedEncoder(network.backbone, layers)
    encoded = labeler.encode([(r.query_words, r.chunk_words) for r in rows])
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    collate, device = labeler.collator(), labeler.device
    pooled: dict[int, list[tuple[int, torch.Tensor]]] = {layer: [] for layer in layers}
    logits = torch.zeros(len(rows))
    was_training = network.training
    network.eval()
    try:
        bar = tqdm(total=len(order), desc="exit head features", disable=not show_progress, unit="pair")
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                ids = order[start : start + batch_size]
                batch = collate([(i, encoded[i]) for i in ids])
                inputs = {k: batch[k].to(device) for k in MODEL_INPUTS if k in batch}
                mask, segments = inputs["attention_mask"], inputs.get("segment_ids")
                states = staged.first(
                    network.backbone_inputs(inputs["input_ids"], mask, inputs.get("token_type_ids"))
                )
                for k, layer in enumerate(layers):
                    if k:
                        states = staged.next(k, states, mask)
                    vectors = pool_states(states.float(), mask, segments, network.pooling).cpu()
                    pooled[layer] += list(zip(ids, vectors, strict=True))
                tag = network.read_heads(staged.next(len(layers), states, mask), mask, segments)[
                    "tag_logits"
                ].float()
                logits[ids] = (tag[:, 0] - tag[:, 1]).clamp(-LOGIT_CLIP, LOGIT_CLIP).cpu()
                bar.update(len(ids))
        bar.close()
    finally:
        network.train(was_training)
    features = {
        layer: torch.stack([v for _, v in sorted(rows_of, key=lambda t: t[0])])
        for layer, rows_of in pooled.items()
    }
    return features, logits


def fit_exit_head(
    labeler, rows: Sequence[LabelerRow], cfg: ExitHeadConfig | None = None, *, show_progress: bool = False
) -> EarlyExit:
    """Fit exit heads to ``labeler``'s outputs on ``rows`` and attach them to the Labeler.

    Args:
        labeler: The trained Labeler (left unchanged but for the attached heads).
        rows: Pairs to fit on: the Labeler's training rows are the pairs it was made for.
        cfg: How to fit (None: ``ExitHeadConfig()``).
        show_progress: Show progress bars.

    Returns:
        The heads, with what the fit measured on the held-out rows in ``fit``; ``save`` them beside
        the Labeler (``EarlyExit.save(folder)``).
    """
    cfg = cfg or ExitHeadConfig()
    rows = list(rows)[: cfg.max_rows] if cfg.max_rows else list(rows)
    features, targets = collect_features(
        labeler, rows, cfg.layers, batch_size=cfg.predict_batch_size, show_progress=show_progress
    )
    heads, report = fit_heads(features, targets, cfg, labeler.device)
    early_exit = EarlyExit(heads, labeler.config.pooling, cfg.quantile, fit=report)
    labeler.attach_early_exit(early_exit)
    return early_exit


def fit_heads(
    features: Mapping[int, torch.Tensor], targets: torch.Tensor, cfg: ExitHeadConfig, device: Any
) -> tuple[dict[int, ExitHead], dict[str, Any]]:
    """One head per layer fit on its stored features to the full model's logits, a share of the
    rows (``cfg.held_out``, by ``cfg.seed``) kept out to measure each.

    Args:
        features: Layer -> the pooled states after it, (rows, width).
        targets: The full model's logit per row, (rows,).
        cfg: How to fit.
        device: Where the fitted heads go (the model's device).

    Returns:
        The heads by layer, and what the fit measured (rows, settings, per layer the agreement on
        the fitted and the held-out rows).
    """
    n = len(targets)
    generator = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(n, generator=generator)
    n_held = int(round(n * cfg.held_out)) if n > 1 else 0
    held, fit = order[:n_held], order[n_held:]
    torch.manual_seed(cfg.seed)
    heads: dict[int, ExitHead] = {}
    report: dict[str, Any] = {"rows": n, "held_out_rows": n_held, "settings": asdict(cfg), "layers": {}}
    for layer in cfg.layers:
        head = ExitHead(features[layer].shape[1], cfg.hidden)
        train_head(head, features[layer][fit], targets[fit], cfg, generator)
        head.eval()
        with torch.no_grad():
            predicted = head(features[layer]).float()
        report["layers"][str(layer)] = {
            "train": agreement(predicted[fit], targets[fit]),
            "held_out": agreement(predicted[held], targets[held]) if n_held else {},
        }
        heads[layer] = head.to(device)
    return heads, report


def train_head(
    head: ExitHead,
    features: torch.Tensor,
    targets: torch.Tensor,
    cfg: ExitHeadConfig,
    generator: torch.Generator,
) -> None:
    """Fit ``head`` to ``targets``: squared error on the expected logit plus the pinball loss of the
    upper one.

    Args:
        head: The head (trained in place).
        features: Its inputs, (rows, width).
        targets: The full model's logits, (rows,).
        cfg: The fit's settings (epochs, learning rate, batch size, quantile).
        generator: The shuffle's random generator.
    """
    optimizer = torch.optim.AdamW(head.parameters(), lr=cfg.learning_rate, weight_decay=0.01)
    steps = max(1, cfg.epochs * math.ceil(len(features) / cfg.batch_size))
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    head.train()
    for _ in range(cfg.epochs):
        for batch in torch.randperm(len(features), generator=generator).split(cfg.batch_size):
            out, y = head(features[batch]), targets[batch]
            gap = y - out[:, UPPER]
            pinball = torch.maximum(cfg.quantile * gap, (cfg.quantile - 1.0) * gap).mean()
            loss = F.mse_loss(out[:, MEAN], y) + pinball
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()


def agreement(predicted: torch.Tensor, targets: torch.Tensor) -> dict[str, object]:
    """How the estimates agree with the full model: the expected logit's error and rank agreement,
    how often the full logit lies below the upper one, and per threshold the share of pairs whose
    upper estimate would let them leave and the share of the model's positive pairs (p >= 0.5, the
    Labeler's Continue) among those.

    Args:
        predicted: The heads' two logits per pair, (pairs, 2).
        targets: The full model's logits, (pairs,).
    """
    if not len(targets):
        return {}
    upper, full = torch.sigmoid(predicted[:, UPPER]), torch.sigmoid(targets)
    continued = full >= 0.5
    out: dict[str, object] = {
        "pairs": len(targets),
        "logit_mae": round(float((predicted[:, MEAN] - targets).abs().mean()), 4),
        "rank_agreement": round(_spearman(predicted[:, MEAN].numpy(), targets.numpy()), 4),
        "upper_coverage": round(float((targets <= predicted[:, UPPER]).float().mean()), 4),
        "continue_share": round(float(continued.float().mean()), 4),
    }
    by_threshold = {}
    for t in REPORTED_THRESHOLDS:
        leaves = upper < t
        by_threshold[str(t)] = {
            "exits": round(float(leaves.float().mean()), 4),
            "continue_lost": round(int((leaves & continued).sum()) / max(1, int(continued.sum())), 4),
        }
    out["by_threshold"] = by_threshold
    return out


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2:
        return float("nan")
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def rows_from_traces(
    records: Sequence[Mapping[str, Any]], chunk_words: Callable[[str], list[str]]
) -> list[LabelerRow]:
    """Every (query, chunk) pair the loop judged in full in ``records``, as Labeler rows to fit exit
    heads on: the loop's later hops read the Filter's queries, which a Labeler's training rows do
    not hold, and a head must see what it will judge. The rows carry no label (the heads are fit to
    the Labeler's outputs): ``labels`` are 0 and ``tag`` Terminate, never read.

    Args:
        records: Prediction records with their traces (a full-depth run: no pair left early).
        chunk_words: A chunk id -> its words (as the loop split them).

    Returns:
        One row per distinct (query, chunk) pair.
    """
    seen: set[tuple[str, str]] = set()
    rows = []
    for r in records:
        for hop in r["trace"]["hops"]:
            for query, hits in zip(hop["queries"], hop["hits"], strict=True):
                for hit in hits:
                    key = (query, hit["id"])
                    if "tag" not in hit or hit.get("exited_at") is not None or key in seen:
                        continue
                    seen.add(key)
                    words = chunk_words(hit["id"])
                    rows.append(
                        LabelerRow(
                            id=f"{r.get('id', '')}-{len(rows)}",
                            question_id=str(r.get("id", "")),
                            query_words=split_words(query),
                            chunk_words=words,
                            labels=[0] * len(words),
                            tag=TAG_TERMINATE,
                            chunk_id=hit["id"],
                        )
                    )
    return rows


def ensure_exit_heads(
    labeler: Path, rows: Sequence[Path], cfg: ExitHeadConfig, *, show_progress: bool = False
) -> dict[str, Any]:
    """The exit heads beside ``labeler``, fit (and saved) unless those there were fit to this
    Labeler, these rows and these settings; returns their fit record.

    Args:
        labeler: The Labeler's folder.
        rows: Files of Labeler rows to fit on (its ``train.jsonl``, and pairs of the loop's own).
        cfg: How to fit.
        show_progress: Show progress bars while fitting.
    """
    files = [Path(f) for f in rows]
    want = {"rows_digest": file_digest(files)[:16], "settings": asdict(cfg)}
    if (labeler / EARLY_EXIT_DIR / "config.json").is_file():
        try:
            fit = load_early_exit(labeler).fit
        except EfficientRAGError:
            fit = {}  # fit to another Labeler, or not readable: fit again
        if {k: fit.get(k) for k in want} == want:
            return fit
    from efficientrag.models import Labeler
    from efficientrag.training.data import read_rows

    model = Labeler.from_pretrained(labeler, device="cpu")
    fit_rows = [row for f in files for row in read_rows(f, "labeler").rows]
    early_exit = fit_exit_head(model, fit_rows, cfg, show_progress=show_progress)
    early_exit.fit.update(want)
    early_exit.save(labeler)
    return early_exit.fit
