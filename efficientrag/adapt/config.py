"""Settings of ``efficientrag adapt``; the preset is ``configs/adapt/minilm-cpu.yaml``."""

from __future__ import annotations

from dataclasses import dataclass, field

from efficientrag.adapt.exit_choice import ExitChoiceConfig
from efficientrag.adapt.method_choice import MethodChoiceConfig
from efficientrag.adapt.mix import MixConfig
from efficientrag.adapt.pair_choice import PairChoiceConfig
from efficientrag.adapt.pseudo_rows import PseudoRowsConfig
from efficientrag.adapt.self_training import SelfTrainConfig
from efficientrag.errors import ConfigError
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.training.config import TrainConfig, cpu_train_config

# What both fine-tunes share. The from-scratch rate (lr 1e-4): on the toy world a gentler fine-tune
# (5e-5, one pass) left the source models' habits in place and adapted nothing
# (tests/adapt/test_toy.py). Checkpoints every 20 steps: a fine-tune is short, a kill loses little.
_FINETUNE: dict = {"learning_rate": 1e-4, "warmup_steps": 10, "mixed_precision": "no", "eval_steps": 0}
_FINETUNE |= {"save_steps": 20, "logging_steps": 5}


def _finetune_labeler() -> TrainConfig:
    return cpu_train_config("labeler", epochs=1, max_eval_rows=300, **_FINETUNE)


def _finetune_filter() -> TrainConfig:
    return cpu_train_config("filter", epochs=3, max_eval_rows=500, **_FINETUNE)


@dataclass
class AdaptConfig:
    work_dir: str = "runs/adapt"
    # The target corpus (JSONL {"id","title","text"} or {"id","contents"}).
    corpus: str = ""
    # The trained models to adapt (folders written by training: their best/ subfolder).
    labeler: str = ""
    filter: str = ""
    # The training set they were trained on (a folder with labeler/ and filter/, each holding
    # train.jsonl and validation.jsonl): mixed back in so the models do not forget it.
    train_data: str = ""
    # Option 1: rows mined from the corpus.
    from_corpus: bool = True
    # Option 2: unlabeled questions (JSONL with "question", or .txt one per line) for self-training.
    questions: str = ""
    # Questions with gold chunk ids in ``corpus`` (JSONL: question, gold_ids): the adapted models and
    # the given ones are scored on them beside the pseudo-validation questions
    # (efficientrag/adapt/validation.py); the given models are kept when the adapted ones score lower.
    validation: str = ""
    retriever: RetrieverConfig = field(default_factory=lambda: RetrieverConfig(kind="bm25"))
    pseudo: PseudoRowsConfig = field(default_factory=PseudoRowsConfig)
    self_train: SelfTrainConfig = field(default_factory=SelfTrainConfig)
    mix: MixConfig = field(default_factory=MixConfig)
    labeler_train: TrainConfig = field(default_factory=_finetune_labeler)
    filter_train: TrainConfig = field(default_factory=_finetune_filter)
    # The loop that self-training records decisions with and the models are scored with: use the
    # settings you retrieve with.
    efficientrag: EfficientRAGConfig = field(default_factory=EfficientRAGConfig)
    # After adapting: the loop, or its Labeler as a one-hop reranker (or the loop containing it),
    # whichever scores higher on the scoring sets (efficientrag/adapt/method_choice.py).
    method_choice: MethodChoiceConfig = field(default_factory=MethodChoiceConfig)
    # Then, for a chosen loop: its later hops' width and pair cap, the fewest Labeler pairs a
    # question within tolerance of the best score on the same scoring sets
    # (efficientrag/adapt/pair_choice.py). Off by default.
    pairs: PairChoiceConfig = field(default_factory=PairChoiceConfig)
    # Then, for the chosen method: the adapted Labeler's early-exit heads, fit on its training rows,
    # and the exit_threshold that runs the fewest layers within tolerance of full depth on the same
    # scoring sets (efficientrag/adapt/exit_choice.py). Off by default.
    early_exit: ExitChoiceConfig = field(default_factory=ExitChoiceConfig)
    progress: bool = True

    def check(self) -> None:
        """Everything a run needs, checked before any work starts."""
        missing = [k for k in ("corpus", "labeler", "filter", "train_data") if not getattr(self, k)]
        if missing:
            raise ConfigError(
                f"adapt needs {', '.join(missing)} (e.g. --corpus my.jsonl --labeler runs/x/labeler/best "
                "--filter runs/x/filter/best --train-data runs/x/synth)"
            )
        if not self.from_corpus and not self.questions:
            raise ConfigError("nothing to adapt from: set from_corpus=true and/or questions=PATH")
        if self.labeler_train.model not in ("", "labeler") or self.filter_train.model not in ("", "filter"):
            raise ConfigError("labeler_train.model / filter_train.model cannot be changed")
        self.labeler_train.model, self.filter_train.model = "labeler", "filter"
