"""TreeHop's YAML settings: retrieval (the ``treehop:`` section of an experiment config) and training
(``accelerate launch train/treehop.py -c configs/treehop/...``).

Both load through :func:`efficientrag.config.load_config`, like every preset, and without importing
torch, so reading an experiment config stays cheap. The network's own ``transformers`` config (what
a saved model's ``config.json`` holds) is :class:`efficientrag.treehop.configuration.TreeHopConfig`.
Training presets: ``configs/treehop/minilm-cpu.yaml`` (offline, CPU) and ``bge-m3-gpu.yaml`` /
``contriever-gpu.yaml`` (the paper's setting; the encoders load by name where the Hub or a local copy
is reachable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.data.config import DataConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.setting_fields import SettingError, bounded, check_settings


@dataclass
class TreeHopRetrievalConfig:
    """``top_k`` chunks per query and per layer, ``hops`` layers: at most top_k x hops chunks.

    The paper reports top_k 5 and 10 with 2 and 3 hops. ``pruning``: "top_k" keeps the layer's K
    best-scored candidates (the intended rule); "official" reproduces the official code's
    index-as-rank selection (docs/treehop.md); "none" keeps every candidate (ablation).
    ``redundancy`` drops candidates the question already output.

    Attributes:
        model: A trained folder (the ``best/`` subfolder of a training run) or a Hub name.
        top_k: Chunks kept per query and per layer.
        hops: Layers of the tree search.
        pruning: ``"top_k"``, ``"official"`` or ``"none"`` (above).
        redundancy: Drop candidates the question already output.
        device: Where the network runs (None: CUDA when available, else CPU).
        answer_max_new_tokens: With ``eval.answer=true``, the answer call's token budget.
    """

    # A folder written by `accelerate launch train/treehop.py` (its best/ subfolder), or a Hub name.
    model: str | None = None
    top_k: int = bounded(5, low=1)
    hops: int = bounded(2, low=1)
    pruning: Literal["top_k", "official", "none"] = "top_k"
    redundancy: bool = True
    # None: cuda if available, else cpu.
    device: str | None = None
    # With eval.answer=true: the answer call's budget (it reads every chunk TreeHop returned).
    answer_max_new_tokens: int = 128

    def __post_init__(self) -> None:
        check_settings(self)


# Keys that decide which batches the run sees and how steps are counted: a resumed run must agree
# with the run that wrote the checkpoint on all of them.
DATA_ORDER_KEYS = (
    "train_sets",
    "retriever",
    "validation_ratio",
    "split_seed",
    "batch_size",
    "epochs",
    "seed",
    "grad_accumulation",
    "max_train_questions",
)


@dataclass
class TreeHopModelSettings:
    """Widths of a new network; ``embed_dim`` always comes from the encoder."""

    gate_dim: int = 1024
    num_heads: int = 1
    num_blocks: int = 3
    score_scale: Literal["gate", "embed"] = "gate"
    dropout: float = 0.0
    initializer_range: float = 0.02


@dataclass
class TreeHopTrainConfig:
    """One TreeHop training run (``accelerate launch train/treehop.py -c configs/treehop/...``).

    Attributes:
        train_sets: Training files; each is pooled into its own corpus and indexed densely (its
            negatives and validation search run over it).
        retriever: The dense retriever (encoder + index) the network learns to move queries in.
        work_dir: Pools, indexes and the embedding cache.
        output_dir: The training run's checkpoints and best model.
        validation_ratio: Share of questions (by a hash of the id) held out to choose the
            checkpoint, in (0, 1).
        split_seed: Seed of that split.
        max_train_questions: Train on this many training-side questions (0: all).
        model: A new network's widths (``embed_dim`` comes from the encoder).
        temperature: The InfoNCE temperature over cosine similarities (the paper: 0.15).
        own_negatives: Use the question's own non-gold paragraphs as negatives.
        in_batch_negatives: Use every other chunk of the batch as negatives.
        learning_rate: AdamW learning rate.
        weight_decay: AdamW weight decay.
        batch_size: Questions per step.
        grad_accumulation: Batches per optimizer step.
        epochs: Passes over the training questions.
        warmup_steps: Linear warm-up steps.
        max_grad_norm: Gradient clipping norm (0: none).
        mixed_precision: ``"no"``, ``"fp16"``, ``"bf16"`` or ``"auto"``.
        seed: The run's random seed.
        cpu_threads: Torch threads on CPU (0: the available cores).
        eval_top_k: Top-k of the validation tree search that chooses the checkpoint.
        eval_hops: Hops of that search.
        eval_every_epochs: Validate every this many epochs.
        save_every_epochs: Checkpoint every this many epochs.
        stop_after_steps: End this session after this step, keeping the checkpoint (0: run on).
        trackers: Experiment trackers (``["wandb"]``, ``["tensorboard"]``).
        wandb_project: The W&B project.
        wandb_mode: ``"offline"``, ``"online"`` or ``"disabled"``.
        run_name: The tracker's run name ("": the tracker chooses one).
        progress: Show progress bars.
    """

    # Training files: each is read, pooled into its own corpus and indexed densely (the
    # negatives and the validation search run over that corpus). Questions without a hop chain
    # (ambiguous bridge order) are recorded in chains_rejects.jsonl.
    train_sets: list[DataConfig] = field(default_factory=lambda: [DataConfig()])
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    # Pools, indexes and the embedding cache go here; the model run to output_dir.
    work_dir: str = "runs/treehop"
    output_dir: str = "runs/treehop/model"
    # Questions on the validation side (by a hash of the id) train nothing and choose the checkpoint.
    # The honest-protocol benchmark uses 0.25 / seed 1, the split its EfficientRAG synthesis uses.
    validation_ratio: float = bounded(0.25, above=0.0, below=1.0)
    split_seed: int = 1
    # > 0: train on this many training-side questions (drawn with ``seed``), e.g. for a data-size
    # curve; validation is unchanged. 0 = all.
    max_train_questions: int = bounded(0, low=0)
    model: TreeHopModelSettings = field(default_factory=TreeHopModelSettings)
    # InfoNCE over cosine similarity / temperature (the paper: 0.15). Negatives: the question's own
    # non-gold paragraphs and every other chunk of the batch.
    temperature: float = bounded(0.15, above=0.0)
    own_negatives: bool = True
    in_batch_negatives: bool = True
    # Optimisation (the paper: AdamW, lr 6e-5, weight decay 2e-8, batches of 64 questions).
    learning_rate: float = bounded(6e-5, above=0.0)
    weight_decay: float = 2e-8
    batch_size: int = bounded(64, low=1)  # questions per step
    grad_accumulation: int = bounded(1, low=1)
    epochs: int = bounded(20, low=1)
    warmup_steps: int = 0
    max_grad_norm: float = 1.0  # 0 = no clipping
    mixed_precision: Literal["no", "fp16", "bf16", "auto"] = "no"
    seed: int = 42
    cpu_threads: int = 0  # 0 = the available cores (see efficientrag/training/threads.py)
    # Checkpoint choice: the tree search on the validation questions with these settings, scored by
    # the mean over training files of (recall + all-gold) / 2, as the EfficientRAG protocol scores.
    eval_top_k: int = bounded(5, low=1)
    eval_hops: int = bounded(2, low=1)
    eval_every_epochs: int = bounded(1, low=1)
    save_every_epochs: int = bounded(1, low=1)
    stop_after_steps: int = 0  # > 0: end this session after that step (checkpoint kept; resume later)
    trackers: list[str] = field(default_factory=list)
    wandb_project: str = "efficientrag"
    wandb_mode: Literal["offline", "online", "disabled"] = "offline"
    run_name: str = ""
    progress: bool = True

    def __post_init__(self) -> None:
        check_settings(self)
        if not (self.own_negatives or self.in_batch_negatives):
            raise SettingError("InfoNCE needs negatives: set own_negatives or in_batch_negatives")
        if not self.train_sets:
            raise SettingError("train_sets is empty: name at least one training file")
        if self.retriever.kind != "dense":
            raise SettingError(
                f"retriever.kind must be 'dense' (TreeHop updates embeddings), got {self.retriever.kind!r}"
            )
