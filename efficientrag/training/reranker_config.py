"""The cross-encoder reranker's training settings (``accelerate launch train/reranker.py -c PRESET``).

Loaded like every preset, through :func:`efficientrag.config.load_config` with ``key=value``
overrides, and without importing torch, so a bad value is refused before any work. The preset is
``configs/reranker/minilm-cpu.yaml``; docs/training.md "The reranker (cross-encoder)" says what a
run trains on and writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.data.config import DataConfig
from efficientrag.hub import OFFLINE_DEFAULT_ENCODER
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.setting_fields import SettingError, bounded, check_settings

# Keys that decide the run's pairs, their order and the schedule: a resumed run must agree with the
# run that wrote the checkpoint on all of them.
DATA_ORDER_KEYS = (
    "train_sets",
    "retriever",
    "backbone",
    "validation_ratio",
    "split_seed",
    "negatives",
    "top_negatives",
    "mine_depth",
    "max_length",
    "batch_size",
    "epochs",
    "learning_rate",
    "warmup_ratio",
    "weight_decay",
    "seed",
)


@dataclass
class RerankerTrainConfig:
    """One cross-encoder reranker training run.

    Attributes:
        train_sets: Training files (the Labeler's); each is pooled into its own corpus and indexed
            with ``retriever``, where its hard negatives and its validation search come from.
        retriever: The search the reranker reranks (the honest protocol's: BM25).
        work_dir: Pools, indexes and the pair cache.
        output_dir: The run: checkpoints, ``best/`` (the CrossEncoder folder), logs and metrics.
        backbone: The encoder a fresh cross-encoder starts from (a one-logit head is added).
        validation_ratio: Share of questions (by a hash of the id) held out to choose the epoch,
            in (0, 1); the synthesis and TreeHop hold out the same questions.
        split_seed: Seed of that split.
        negatives: Non-gold chunks paired with each training question (at most).
        top_negatives: How many of them are the retriever's best-ranked non-gold hits; the rest are
            drawn at random from the non-gold hits below them, down to ``mine_depth``.
        mine_depth: Hits searched per question to mine negatives from.
        max_length: Tokens of a (question, chunk) pair the cross-encoder reads; longer pairs are cut.
        epochs: Passes over the training pairs.
        batch_size: Pairs per optimizer step (per process).
        eval_batch_size: Pairs per forward pass when scoring validation questions.
        learning_rate: AdamW's peak learning rate.
        warmup_ratio: Share of the steps with a linear warm-up.
        weight_decay: AdamW weight decay.
        mixed_precision: ``"no"``, ``"fp16"`` or ``"bf16"`` (GPUs).
        seed: Seed of the head's initialization, the pair order and the sampled negatives.
        cpu_threads: Torch threads on CPU (0: the available cores).
        eval_top_n: Hits of the retriever reranked per validation question.
        eval_k: Chunks kept after reranking; recall and all-gold are measured at this count.
        stop_after_steps: End this session after this step, keeping a checkpoint (0: run on).
        progress: Show progress bars.
        trackers: Experiment trackers (``["tensorboard"]``, ``["wandb"]``); none by default.
    """

    train_sets: list[DataConfig] = field(default_factory=lambda: [DataConfig()])
    # BM25 by default: the honest protocol's search, and what the `rerank` method reranks.
    retriever: RetrieverConfig = field(default_factory=lambda: RetrieverConfig(kind="bm25"))
    work_dir: str = "runs/reranker"
    output_dir: str = "runs/reranker/model"
    backbone: str = OFFLINE_DEFAULT_ENCODER
    # The synthesis' and TreeHop's split (0.25 / seed 1): the Labeler's settings are chosen on the
    # same validation questions.
    validation_ratio: float = bounded(0.25, above=0.0, below=1.0)
    split_seed: int = 1
    negatives: int = bounded(8, low=0)
    top_negatives: int = bounded(8, low=0)
    mine_depth: int = bounded(50, low=1)
    max_length: int = bounded(256, low=1)
    epochs: int = bounded(2, low=1)
    batch_size: int = bounded(16, low=1)
    eval_batch_size: int = bounded(64, low=1)
    learning_rate: float = bounded(5e-5, above=0.0)
    warmup_ratio: float = bounded(0.1, low=0.0, below=1.0)
    weight_decay: float = bounded(0.01, low=0.0)
    mixed_precision: Literal["no", "fp16", "bf16"] = "no"
    seed: int = 42
    cpu_threads: int = bounded(0, low=0)  # 0 = the available cores (efficientrag/training/threads.py)
    # Validation after each epoch: the question's top eval_top_n reranked, eval_k kept.
    eval_top_n: int = bounded(20, low=1)
    eval_k: int = bounded(6, low=1)
    stop_after_steps: int = bounded(
        0, low=0
    )  # > 0: end this session after that step (checkpoint kept; resume later)
    progress: bool = True
    trackers: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.train_sets:
            raise SettingError("train_sets is empty: name at least one training file")
        check_settings(self)
        if self.top_negatives > self.negatives:
            raise SettingError(
                f"top_negatives ({self.top_negatives}) must be <= negatives ({self.negatives}): "
                "it is how many of the negatives come from the top of the search"
            )
        if self.negatives > self.mine_depth:
            raise SettingError(f"negatives ({self.negatives}) must be <= mine_depth ({self.mine_depth})")
        if self.eval_k > self.eval_top_n:
            raise SettingError(f"eval_k ({self.eval_k}) must be <= eval_top_n ({self.eval_top_n})")
        if not self.backbone:
            raise SettingError("backbone is empty: name the encoder to start from")
