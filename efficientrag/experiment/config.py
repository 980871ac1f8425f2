"""One experiment = one YAML: data, retriever, evaluation and method settings, under one work dir.

``corpus``, ``index``, ``eval`` and ``retrieve`` all read this config, so a preset written once
runs every step, and each step reuses what the previous one wrote under ``work_dir``:

    work_dir/data/            pooled corpus + examples (``efficientrag corpus``)
    work_dir/index/<name>/    retriever index           (``efficientrag index``)
    work_dir/eval/<method>/   predictions, summary, table (``efficientrag eval``)

The settings alone live here; reading the data is :mod:`efficientrag.experiment.prepared_data`, and
building a run's backend and method from them is :mod:`efficientrag.experiment.assembly`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from efficientrag.baselines.config import BaselinesConfig
from efficientrag.data.config import DataConfig
from efficientrag.llm.generator_config import GeneratorConfig
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.setting_fields import SPEED_ONLY, bounded, check_settings
from efficientrag.treehop.config import TreeHopRetrievalConfig


@dataclass
class EvalSettings:
    method: str = "direct_r"
    ks: list[int] = field(default_factory=lambda: [2, 4, 6, 10, 20])
    limit: int | None = bounded(None, low=0)
    batch_size: int = bounded(32, low=1, roles=[SPEED_ONLY])
    resume: bool = True
    # Output subfolder under work_dir/eval (default: the method name).
    name: str | None = None
    # Evaluate only these question ids / never these (one id per line, e.g. training questions).
    ids_file: str | None = None
    exclude_ids_file: str | None = None
    # Retrieval-only methods (direct_r, efficientrag) also make one answer call from their chunks.
    answer: bool = False
    # Exit non-zero when more questions than this fail (their reasons are in errors.jsonl).
    max_failures: int = bounded(0, low=0)
    # Stop the run when its first N questions all fail with the same error (0: never stop early).
    fail_fast_after: int = bounded(3, low=0)
    # When another process is writing the run folder: wait for it (true) or refuse (false, `--wait`).
    wait_for_lock: bool = False

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class ExperimentConfig:
    work_dir: str = "runs/toy"
    data: DataConfig = field(default_factory=DataConfig)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    eval: EvalSettings = field(default_factory=EvalSettings)
    efficientrag: EfficientRAGConfig = field(default_factory=EfficientRAGConfig)
    # TreeHop's model and search settings (``--method treehop``; needs a dense retriever).
    treehop: TreeHopRetrievalConfig = field(default_factory=TreeHopRetrievalConfig)
    # The one LLM every answering method uses (Direct, CoT, ..., EfficientRAG's answer call).
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    # Every method's settings (baselines.<method>: top-k, iterations, thresholds, look-ahead ...), the
    # answering prompts and the QA judge; EfficientRAG's are the loop's own section above.
    baselines: BaselinesConfig = field(default_factory=BaselinesConfig)

    @property
    def data_dir(self) -> Path:
        return Path(self.work_dir) / "data"

    @property
    def index_dir(self) -> Path:
        if self.retriever.index_dir:
            return Path(self.retriever.index_dir)
        return Path(self.work_dir) / "index" / index_name(self.retriever)

    def eval_dir(self, method: str | None = None) -> Path:
        return Path(self.work_dir) / "eval" / (self.eval.name or method or self.eval.method)


def index_name(cfg: RetrieverConfig) -> str:
    """The index folder's name under ``work_dir/index``: its search backend's own."""
    from efficientrag.retrieval.factory import backend_of  # faiss and bm25s: only when a run asks

    return backend_of(cfg.kind).index_name(cfg)
