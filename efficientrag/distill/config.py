"""Settings of ``efficientrag distill``; the preset is ``configs/distill/minilm-cpu.yaml``."""

from __future__ import annotations

from dataclasses import dataclass, field

from efficientrag.adapt.mix import MixConfig
from efficientrag.errors import ConfigError
from efficientrag.models.inputs import KINDS
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.training.config import TrainConfig, cpu_train_config

# What both students share: the from-scratch rate (a student lost layers, so it has more to repair
# than a fine-tune), checkpoints every 50 steps so a kill loses little.
_STUDENT: dict = {"learning_rate": 1e-4, "warmup_steps": 50, "mixed_precision": "no", "eval_steps": 0}
_STUDENT |= {"save_steps": 50, "logging_steps": 10}


def _student_labeler() -> TrainConfig:
    return cpu_train_config("labeler", epochs=2, **_STUDENT)


def _student_filter() -> TrainConfig:
    return cpu_train_config("filter", epochs=3, **_STUDENT)


@dataclass
class DistillConfig:
    work_dir: str = "runs/distill"
    # The teachers: trained Labeler/Filter folders (a training run's best/).
    labeler: str = ""
    filter: str = ""
    # Which of the two to distill; a model left out is used as it is (its teacher).
    models: list[str] = field(default_factory=lambda: list(KINDS))
    # The student: ``depth`` teacher layers spread evenly (the last kept), or these explicit indices.
    depth: int = 3
    layers: list[int] = field(default_factory=list)
    # The teachers' training set (labeler/ and filter/, each with train.jsonl and validation.jsonl):
    # the hard labels, and validation (the student's best step is chosen on its gold labels).
    train_data: str = ""
    # Training questions (JSONL with "question", or .txt one per line) and the corpus they are asked
    # over: the teacher's loop runs on them and every pair it meets becomes a row ("" = none).
    questions: str = ""
    corpus: str = ""
    retriever: RetrieverConfig = field(default_factory=lambda: RetrieverConfig(kind="bm25"))
    # The loop that records the pairs: the settings you retrieve with (which pairs it meets).
    efficientrag: EfficientRAGConfig = field(default_factory=EfficientRAGConfig)
    record_batch_size: int = 16
    # Recorded rows per synthesized row, per model (whole questions, seeded; 0: synthesized only).
    mix: MixConfig = field(default_factory=lambda: MixConfig(labeler_ratio=3.0, filter_ratio=3.0))
    labeler_train: TrainConfig = field(default_factory=_student_labeler)
    filter_train: TrainConfig = field(default_factory=_student_filter)
    progress: bool = True

    def check(self) -> None:
        """Everything a run needs, checked before any work starts."""
        wanted = [k for k in ("labeler", "filter", "train_data") if not getattr(self, k)]
        if wanted:
            raise ConfigError(
                f"distill needs {', '.join(wanted)} (e.g. --labeler runs/x/labeler/best --filter "
                "runs/x/filter/best --train-data runs/x/synth)"
            )
        odd = [m for m in self.models if m not in KINDS]
        if odd or not self.models:
            raise ConfigError(f"models must name some of {KINDS}, got {self.models}")
        if bool(self.questions) != bool(self.corpus):
            raise ConfigError("recorded pairs need both questions and corpus (or neither)")
        if self.depth < 1 and not self.layers:
            raise ConfigError(f"depth must be >= 1 (or give layers), got {self.depth}")
        if self.record_batch_size < 1:
            raise ConfigError(f"record_batch_size must be >= 1, got {self.record_batch_size}")
        if self.labeler_train.model not in ("", "labeler") or self.filter_train.model not in ("", "filter"):
            raise ConfigError("labeler_train.model / filter_train.model cannot be changed")
        self.labeler_train.model, self.filter_train.model = "labeler", "filter"
