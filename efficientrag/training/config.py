"""The one training config, for both models; presets in ``configs/labeler`` and ``configs/filter``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from efficientrag.config import load_config
from efficientrag.errors import ConfigError
from efficientrag.models.inputs import KINDS
from efficientrag.setting_fields import SettingError, bounded, check_settings, probability

# Keys that decide which batches the run sees, in which order, how steps are counted, and which
# weights it started from. A resumed run must agree on them with the run that wrote the checkpoint,
# or it would not continue that run.
DATA_ORDER_KEYS = (
    "model",
    "backbone",
    "data_dir",
    "epochs",
    "max_steps",
    "batch_size",
    "grad_accumulation",
    "max_length",
    "seed",
    "group_by_length",
    "pad_to_max_length",
    "max_train_rows",
    "init_from",
    "teacher",
    "student_layers",
    "student_depth",
)


@dataclass
class TrainConfig:
    """One training run of a Labeler or a Filter (``efficientrag train``, ``train/*.py``).

    Attributes:
        model: ``"labeler"`` or ``"filter"`` ("": set by the entry point).
        backbone: The pre-trained encoder a fresh model starts from.
        init_from: A trained folder of this kind to fine-tune instead (its architecture keys win).
        teacher: A trained folder of this kind to distil from (the student starts as it).
        student_layers: With a teacher, the teacher encoder layers the student keeps (indices).
        student_depth: With a teacher, how many layers to keep, spread evenly (the last kept).
        distill_temperature: Softmax temperature T of the distillation loss.
        distill_hard_weight: Weight of the usual loss on the labels.
        distill_soft_weight: Weight of T^2 x KL to the teacher's token and tag distributions.
        pooling: Tag-head pooling (Labeler): ``"mean"`` (the paper), ``"first"`` (the official
            code) or ``"pair"``.
        word_aggregation: Sub-word -> word probability: ``"first"``, ``"mean"`` or ``"max"``.
        dropout: Dropout before the heads.
        data_dir: The training set: ``train.jsonl`` and ``validation.jsonl`` rows, or a
            ``save_to_disk`` folder with those splits.
        output_dir: Where checkpoints, the best model and metrics go.
        max_train_rows: Training rows used at most (0: all).
        max_eval_rows: Validation rows used at most (0: all).
        max_bad_row_fraction: Share of malformed rows above which the run fails, in [0, 1].
        cache_dir: The tokenized-rows cache ("": ``HF_DATASETS_CACHE/efficientrag``).
        learning_rate: Peak learning rate.
        epochs: Passes over the training rows.
        max_steps: Total optimizer steps, overriding ``epochs`` when > 0.
        batch_size: Rows per device and step.
        eval_batch_size: Rows per evaluation batch (0: 2 x ``batch_size``).
        grad_accumulation: Batches per optimizer step.
        max_length: Input length in tokens (saved with the model as its inference default).
        warmup_steps: Linear warm-up steps.
        weight_decay: AdamW weight decay.
        adam_epsilon: AdamW epsilon.
        max_grad_norm: Gradient clipping norm (0: none).
        mixed_precision: ``"no"``, ``"fp16"``, ``"bf16"`` or ``"auto"``.
        seed: The run's random seed (head initialization, data order, dropout).
        group_by_length: Batch rows of similar length (less padding).
        pad_to_max_length: Pad every batch to ``max_length``, as the official code did.
        num_workers: Data-loader worker processes.
        cpu_threads: Torch threads per process on CPU (0: the available cores per local process).
        compat: Use the official code's loss (see ``compute_loss``).
        class_weights: Token-loss class weights ``[negative, positive]``, ``"auto"`` (N / (2 x
            count)), or None.
        eval_steps: Evaluate every this many steps (0: at each epoch end; a final one always runs).
        save_steps: Write ``checkpoints/last`` every this many steps (and at each epoch end).
        logging_steps: Log every this many steps.
        eval_threshold: Word probability at or above which a word counts as positive in metrics.
        stop_after_steps: End this session after this step, keeping the checkpoint (0: run on).
        trackers: Experiment trackers (``["wandb"]``, ``["tensorboard"]``).
        wandb_project: The W&B project.
        wandb_mode: ``"offline"``, ``"online"`` or ``"disabled"``.
        run_name: The tracker's run name ("": the tracker chooses one).
    """

    # What to train.
    model: Literal[("", *KINDS)] = ""  # "" = decided by the entry point (train/labeler.py …)
    backbone: str = "sentence-transformers/all-MiniLM-L6-v2"
    # A trained Labeler/Filter folder to fine-tune (its network, heads and tokenizer; the
    # architecture keys below are then its own): adapting a model instead of training a fresh one.
    init_from: str = ""
    # Distillation (efficientrag distill, train/distill.py, docs/training.md): a trained folder of
    # this kind to learn from. The student starts as the teacher with only some of its encoder
    # layers: ``student_layers`` (teacher indices, e.g. [1, 3, 5]) or ``student_depth`` of them
    # spread evenly (the last always kept). The loss is distill_hard_weight x the usual loss +
    # distill_soft_weight x T^2 x KL to the teacher's token and tag distributions at
    # T = distill_temperature.
    teacher: str = ""
    student_layers: list[int] = field(default_factory=list)
    student_depth: int = bounded(0, low=0)
    distill_temperature: float = bounded(2.0, above=0.0)
    distill_hard_weight: float = 1.0
    distill_soft_weight: float = 1.0
    # Tag-head pooling (Labeler): the paper averages all states; "first" is the official code's;
    # "pair" (ours) compares the query's and the chunk's mean states (docs/training.md).
    pooling: Literal["mean", "first", "pair"] = "mean"
    word_aggregation: Literal["first", "mean", "max"] = "first"  # sub-word -> word probability
    dropout: float = 0.1
    # Data: a folder with train.jsonl and validation.jsonl (LabelerRow / FilterRow lines), or a
    # DatasetDict.save_to_disk folder with train and validation splits of the same rows.
    data_dir: str = ""
    output_dir: str = "runs/train"
    max_train_rows: int = 0  # 0 = all
    max_eval_rows: int = 0  # 0 = all
    max_bad_row_fraction: float = probability(0.01)  # more skipped (malformed) rows than this fails the run
    cache_dir: str = ""  # checked/tokenized rows (datasets Arrow cache); "" = HF_DATASETS_CACHE/efficientrag
    # Optimisation.
    learning_rate: float = bounded(5e-6, above=0.0)
    epochs: int = bounded(2, low=0)
    max_steps: int = bounded(0, low=0)  # > 0: total optimizer steps (overrides epochs); defines the schedule
    batch_size: int = bounded(32, low=1)  # per device
    eval_batch_size: int = 0  # 0 = 2 x batch_size
    grad_accumulation: int = bounded(1, low=1)
    max_length: int = bounded(384, low=1)
    warmup_steps: int = bounded(200, low=0)
    weight_decay: float = 0.01
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0  # 0 = no clipping
    mixed_precision: Literal["no", "fp16", "bf16", "auto"] = "auto"
    seed: int = 42
    # Batching.
    group_by_length: bool = True  # batches of similar length: less padding
    pad_to_max_length: bool = False  # the official fixed-length padding (for comparison only)
    num_workers: int = 0
    # CPU-only runs: torch threads per process (0 = the available cores / local processes; see
    # efficientrag/training/threads.py for why the entry script sets this over accelerate's 1).
    cpu_threads: int = 0
    # The official code's loss (pad/query positions as negatives, token loss on predicted-Continue
    # rows, shared class weights). See docs/training.md.
    compat: bool = False
    class_weights: list[float] | Literal["auto"] | None = None  # [w_neg, w_pos] or "auto" = N/(2*count)
    # Evaluation, checkpoints, logging.
    eval_steps: int = bounded(
        200, low=0
    )  # 0 = at the end of each epoch instead (a final evaluation always runs)
    save_steps: int = bounded(200, low=0)  # checkpoints/last is also written at every epoch end
    logging_steps: int = 10
    eval_threshold: float = probability(0.5)  # word probability at or above which a word counts as positive
    stop_after_steps: int = bounded(
        0, low=0
    )  # > 0: end this session after that step (checkpoint kept; resume later)
    trackers: list[str] = field(default_factory=list)  # e.g. ["wandb"], ["tensorboard"]
    wandb_project: str = "efficientrag"
    wandb_mode: Literal["offline", "online", "disabled"] = "offline"
    run_name: str = ""

    def __post_init__(self) -> None:
        check_settings(self)
        if self.epochs == 0 and self.max_steps == 0:
            raise SettingError("set epochs or max_steps")
        if isinstance(self.class_weights, list) and len(self.class_weights) != 2:
            raise SettingError(f"class_weights needs 2 values [negative, positive], got {self.class_weights}")
        self._check_distillation()

    def _check_distillation(self) -> None:
        """A teacher needs exactly one way to choose the student's layers, and the student starts
        from the teacher, never from ``init_from``; layer keys without a teacher mean nothing."""
        student = bool(self.student_layers) or self.student_depth != 0
        if not self.teacher:
            if student:
                raise SettingError("student_layers / student_depth need a teacher (a trained folder)")
            return
        if self.init_from:
            raise SettingError(
                "teacher and init_from exclude each other: the student starts from the teacher"
            )
        if bool(self.student_layers) == (self.student_depth != 0):
            raise SettingError(
                "with a teacher, set exactly one of student_layers (e.g. [1, 3, 5]) or student_depth (e.g. 3)"
            )
        weights = (self.distill_hard_weight, self.distill_soft_weight)
        if min(weights) < 0 or sum(weights) <= 0:
            raise SettingError(
                f"distill_hard_weight and distill_soft_weight must be >= 0, not both 0; got {weights}"
            )

    @property
    def distilling(self) -> bool:
        """Whether the run distils from a teacher."""
        return bool(self.teacher)

    @property
    def per_device_eval_batch_size(self) -> int:
        """Rows per evaluation batch and device (``eval_batch_size``, else 2 x ``batch_size``)."""
        return self.eval_batch_size or 2 * self.batch_size


def load_train_config(
    kind: str, path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()
) -> TrainConfig:
    """Load a preset for ``kind``; a preset written for the other model is refused.

    Args:
        kind: ``"labeler"`` or ``"filter"``.
        path: The YAML preset (None: the defaults).
        overrides: ``key=value`` overrides.

    Returns:
        The config, its ``model`` set to ``kind``.

    Raises:
        ConfigError: An unknown kind, a preset for the other model, or a bad key or value.
    """
    if kind not in KINDS:
        raise ConfigError(f"model kind must be one of {KINDS}, got {kind!r}")
    cfg = load_config(TrainConfig, path, overrides)
    if cfg.model and cfg.model != kind:
        raise ConfigError(f"{path}: this config trains a {cfg.model!r}, not a {kind!r}")
    cfg.model = kind  # type: ignore[assignment]
    return cfg


# Each model's batch and length shape in the MiniLM CPU presets (configs/labeler/minilm-cpu.yaml,
# configs/filter/minilm-cpu.yaml): the Labeler reads a chunk with its query, the Filter a query.
CPU_SHAPE: dict[str, dict[str, Any]] = {
    "labeler": {"class_weights": "auto", "batch_size": 16, "eval_batch_size": 32, "max_length": 256},
    "filter": {"batch_size": 32, "eval_batch_size": 64, "max_length": 128},
}


def cpu_train_config(model: str, **settings: Any) -> TrainConfig:
    """A run of ``model`` in the CPU presets' shape (:data:`CPU_SHAPE`): what the jobs that train
    from trained models on a CPU (adapt's fine-tunes, distill's students) start from.

    Args:
        model: ``"labeler"`` or ``"filter"``.
        settings: further ``TrainConfig`` fields; they win over the shape.

    Returns:
        The config.
    """
    return TrainConfig(model=model, **{**CPU_SHAPE[model], **settings})
