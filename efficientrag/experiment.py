"""One experiment = one YAML: data, retriever, evaluation and method settings, under one work dir.

``corpus``, ``index``, ``eval`` and ``retrieve`` all read this config, so a preset written once
runs every step, and each step reuses what the previous one wrote under ``work_dir``:

    work_dir/data/            pooled corpus + examples (``efficientrag corpus``)
    work_dir/index/<name>/    retriever index           (``efficientrag index``)
    work_dir/eval/<method>/   predictions, summary, table (``efficientrag eval``)
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from efficientrag.baselines.active.config import ActiveRAGConfig
from efficientrag.baselines.config import BaselinesConfig
from efficientrag.config import to_dict
from efficientrag.data.config import DataConfig
from efficientrag.data.loader import PooledDataset, load_data, load_prepared, save_prepared
from efficientrag.data.schema import Example
from efficientrag.llm.generator_config import GeneratorConfig
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.treehop.config import TreeHopRetrievalConfig

log = logging.getLogger(__name__)

DATA_CONFIG_FILE = "data_config.json"


@dataclass
class EvalSettings:
    method: str = "direct_r"
    ks: list[int] = field(default_factory=lambda: [2, 4, 6, 10, 20])
    limit: int | None = None
    batch_size: int = 32
    resume: bool = True
    # Output subfolder under work_dir/eval (default: the method name).
    name: str | None = None
    # Evaluate only these question ids / never these (one id per line, e.g. training questions).
    ids_file: str | None = None
    exclude_ids_file: str | None = None
    # Retrieval-only methods (direct_r, efficientrag) also make one answer call from their chunks.
    answer: bool = False


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
    # Settings of the answering baselines (prompts, top-k, iterations, follow-ups) and the QA judge.
    baselines: BaselinesConfig = field(default_factory=BaselinesConfig)
    # Settings of the active RAG methods (FLARE, DRAGIN, wo/SR/FL/FS-RAG): thresholds, look-ahead, top-k.
    active: ActiveRAGConfig = field(default_factory=ActiveRAGConfig)

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
    if cfg.kind == "bm25":
        return "bm25"
    encoder = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(cfg.encoder.rstrip("/")).name)
    dense = f"dense-{encoder}-{cfg.index_type}"
    return f"hybrid-{dense}-bm25" if cfg.kind == "hybrid" else dense


def prepare_data(cfg: ExperimentConfig, *, rebuild: bool = False) -> PooledDataset:
    """Load the pooled data written by an earlier step when it was built from the same data
    settings; otherwise read the dataset files, pool them and save the result."""
    out = cfg.data_dir
    wanted = to_dict(cfg.data)
    marker = out / DATA_CONFIG_FILE
    if not rebuild and marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == wanted:
        return load_prepared(out)
    pooled = load_data(cfg.data)
    save_prepared(pooled, out)
    marker.write_text(json.dumps(wanted, indent=2), encoding="utf-8")
    return pooled


def select_examples(cfg: ExperimentConfig, examples: list[Example]) -> list[Example]:
    """Apply ``eval.ids_file``, ``eval.exclude_ids_file`` and ``eval.limit`` (in that order)."""
    selected = examples
    if cfg.eval.ids_file:
        keep = _read_ids(cfg.eval.ids_file)
        selected = [ex for ex in selected if ex.id in keep]
    if cfg.eval.exclude_ids_file:
        drop = _read_ids(cfg.eval.exclude_ids_file)
        selected = [ex for ex in selected if ex.id not in drop]
    if cfg.eval.limit is not None:
        selected = selected[: cfg.eval.limit]
    return selected


def _read_ids(path: str) -> set[str]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"question id file not found: {p}")
    return {line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()}
