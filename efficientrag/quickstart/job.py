"""``efficientrag quickstart``: the whole method on one machine, from data to a comparison table.

data -> split questions (train / held out) -> synthesize Labeler and Filter training sets from the
training questions (annotation teacher: no LLM) -> train both models -> index the corpus ->
evaluate Direct-R and EfficientRAG on the held-out questions -> table + recall-vs-chunks plot.

Every step keeps its output under ``work_dir`` and is skipped (or resumed) when run again, so an
interrupted quickstart continues where it stopped. The defaults (toy world, all-MiniLM-L6-v2 from
the ``offline`` extra, CPU-sized training) need no file argument and no network: the model recipes
are ``configs/quickstart/toy.yaml``, which extends the MiniLM CPU training presets; the other
``configs/quickstart/*.yaml`` and ``key=value`` overrides change them. The benchmark
``benchmarks/retrieval_efficientrag.py`` drives the same steps on the shared real data.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from efficientrag.atomic import write_text_atomic
from efficientrag.config import save_config
from efficientrag.config_values import from_dict
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.data.split import VALIDATION, split_of
from efficientrag.errors import ConfigError
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.quickstart.presets import preset_path, read_preset
from efficientrag.retrieval.base import Retriever
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.setting_fields import SettingError
from efficientrag.synth.config import SynthConfig
from efficientrag.training.config import TrainConfig
from efficientrag.training.run import train_model

log = logging.getLogger(__name__)

RECALL_PLOT = "recall_vs_chunks.png"


# The quickstart's model recipes: this preset's ``labeler`` and ``filter`` sections, which extend the
# MiniLM CPU training presets (configs/labeler/minilm-cpu.yaml, configs/filter/minilm-cpu.yaml)
# through ``_base_`` with fewer passes for the toy world. Written there once, not here again.
DEFAULT_PRESET = "quickstart/toy.yaml"

# SynthConfig keys the quickstart sets itself (from its own key, in the value).
_OWN_SYNTH_KEYS = {
    "data": "data",
    "retriever": "retriever",
    "out_dir": "work_dir",
    "seed": "split_seed",
    "progress": "progress",
}


def _model_recipe(kind: str) -> TrainConfig:
    return from_dict(TrainConfig, read_preset(DEFAULT_PRESET)[kind], origin=str(preset_path(DEFAULT_PRESET)))


@dataclass
class QuickstartConfig:
    work_dir: str = "runs/quickstart"
    # The toy world by default: 400 generated questions, of which ~25% are held out.
    data: DataConfig = field(default_factory=lambda: DataConfig(toy=ToyWorldConfig(num_questions=400)))
    # Share of questions held out for evaluation (by a hash of the question id: a question never
    # moves side when more are added). The rest is the training pool for synthesis.
    eval_ratio: float = 0.25
    split_seed: int = 0
    # Evaluate at most this many held-out questions (None: all).
    eval_limit: int | None = None
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    # Synthesis settings (teacher, negatives, validation_ratio, ...); its data, retriever, output
    # folder, seed and progress are the quickstart's own (_OWN_SYNTH_KEYS).
    synth: SynthConfig = field(default_factory=SynthConfig)
    # Training settings; data_dir and output_dir are set by the quickstart (under work_dir).
    labeler: TrainConfig = field(default_factory=lambda: _model_recipe("labeler"))
    filter: TrainConfig = field(default_factory=lambda: _model_recipe("filter"))
    efficientrag: EfficientRAGConfig = field(default_factory=EfficientRAGConfig)
    # Training questions from other files than the evaluated ones (a dataset's train split, or other
    # datasets for transfer): each is synthesized over its own pooled corpus, the training sets are
    # merged, and every question of ``data`` is held out (``eval_ratio`` is then not used).
    train_sets: list[DataConfig] = field(default_factory=list)
    ks: list[int] = field(default_factory=lambda: [2, 4, 6, 10, 20])
    batch_size: int = 32
    progress: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.eval_ratio < 1.0:
            raise SettingError(f"eval_ratio must be in (0, 1), got {self.eval_ratio}")
        if self.labeler.model not in ("", "labeler") or self.filter.model not in ("", "filter"):
            raise SettingError("labeler.model / filter.model cannot be changed in a quickstart config")
        self.labeler.model, self.filter.model = "labeler", "filter"  # type: ignore[assignment]
        unset = SynthConfig()
        for key, own in _OWN_SYNTH_KEYS.items():
            if getattr(self.synth, key) != getattr(unset, key):
                raise SettingError(f"synth.{key} is set by the quickstart from '{own}'; set {own} instead")


@dataclass
class QuickstartPaths:
    root: Path

    @property
    def split(self) -> Path:
        return self.root / "split"

    @property
    def synth(self) -> Path:
        return self.root / "synth"

    @property
    def labeler(self) -> Path:
        return self.root / "models" / "labeler"

    @property
    def filter(self) -> Path:
        return self.root / "models" / "filter"

    def eval(self, name: str) -> Path:
        return self.root / "eval" / name


def split_examples(
    examples: Sequence[Example], eval_ratio: float, seed: int = 0
) -> tuple[list[Example], list[Example]]:
    """(training pool, held-out) by question id; see :func:`efficientrag.data.split.split_of`."""
    train, held_out = [], []
    for ex in examples:
        side = split_of(ex.id, validation_ratio=eval_ratio, seed=seed)
        (held_out if side == VALIDATION else train).append(ex)
    if not train or not held_out:
        raise ConfigError(
            f"splitting {len(examples)} questions with eval_ratio={eval_ratio} left one side empty; "
            "use more questions or another eval_ratio"
        )
    return train, held_out


def run_quickstart(cfg: QuickstartConfig) -> dict[str, Any]:
    """Run (or continue) every step; returns the summary also written to ``quickstart.json``."""
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.retrieval.factory import build_retriever

    paths = QuickstartPaths(Path(cfg.work_dir))
    paths.root.mkdir(parents=True, exist_ok=True)
    save_config(cfg, paths.root / "config.yaml")
    timings: dict[str, float] = {}

    with _timed(timings, "data"):
        exp = ExperimentConfig(work_dir=cfg.work_dir, data=cfg.data, retriever=cfg.retriever)
        pooled = prepare_data(exp)
        if cfg.train_sets:
            train_examples, held_out = [], list(pooled.examples)
        else:
            train_examples, held_out = split_examples(pooled.examples, cfg.eval_ratio, cfg.split_seed)
        if cfg.eval_limit is not None:
            held_out = held_out[: cfg.eval_limit]
        _write_ids(paths.split / "train_ids.txt", train_examples)
        _write_ids(paths.split / "eval_ids.txt", held_out)
    log.info(
        "%d questions: %d for training data, %d held out; corpus of %d chunks",
        len(pooled.examples),
        len(train_examples),
        len(held_out),
        len(pooled.corpus),
    )
    with _timed(timings, "index"):
        retriever = build_retriever(cfg.retriever, pooled.corpus, exp.index_dir)
    with _timed(timings, "synthesis"):
        if cfg.train_sets:
            synth_stats, train_examples = synthesize_train_sets(cfg, paths, {ex.id for ex in held_out})
            _write_ids(paths.split / "train_ids.txt", train_examples)
        else:
            synth_stats = synthesize(cfg, paths, pooled.corpus, train_examples, retriever)
    with _timed(timings, "train_labeler"):
        labeler_metrics = train_model(cfg.labeler, paths.synth / "labeler", paths.labeler)
    with _timed(timings, "train_filter"):
        filter_metrics = train_model(cfg.filter, paths.synth / "filter", paths.filter)
    with _timed(timings, "eval_direct_r"):
        direct = evaluate_direct(cfg, retriever, held_out, paths.eval("direct_r"))
    with _timed(timings, "eval_efficientrag"):
        rag_cfg = replace(
            cfg.efficientrag, labeler=str(paths.labeler / "best"), filter=str(paths.filter / "best")
        )
        efficient = evaluate_efficientrag(cfg, rag_cfg, retriever, held_out, paths.eval("efficientrag"))

    summary = {
        "dataset": cfg.data.dataset,
        "trained_on": [d.dataset for d in cfg.train_sets] or [cfg.data.dataset],
        "questions": {
            "all": len(pooled.examples),
            "train_pool": len(train_examples),
            "held_out": len(held_out),
        },
        "corpus_chunks": len(pooled.corpus),
        "synthesis": synth_stats,
        "labeler": _model_metrics(labeler_metrics),
        "filter": _model_metrics(filter_metrics),
        "direct_r": direct["retrieval"],
        "efficientrag": efficient["retrieval"]["all"],
        "efficientrag_counters": efficient.get("counters_mean", {}),
        "timings_s": timings,
    }
    table = comparison_table(cfg.data.dataset, direct, [("EfficientRAG", efficient)])
    plot = plot_comparison(
        direct, [("EfficientRAG", efficient)], paths.root / RECALL_PLOT, title=f"{cfg.data.dataset}: held-out"
    )
    report = _report(cfg, summary, table, plot)
    write_text_atomic(paths.root / "quickstart.md", report)
    write_text_atomic(paths.root / "quickstart.json", json.dumps(summary, indent=2))
    summary["table"] = table
    summary["report_path"] = str(paths.root / "quickstart.md")
    summary["plot_path"] = str(plot)
    return summary


# -- steps ----------------------------------------------------------------------------------------


def synthesize(
    cfg: QuickstartConfig,
    paths: QuickstartPaths,
    corpus: Corpus,
    examples: Sequence[Example],
    retriever: Retriever,
) -> dict[str, Any]:
    """Labeler/Filter training sets from ``examples`` (resumable: finished stages are skipped)."""
    from efficientrag.synth.pipeline import run_synthesis

    scfg = replace(
        cfg.synth,
        data=cfg.data,
        retriever=cfg.retriever,
        out_dir=str(paths.synth),
        # Another seed than the held-out split's: with the same hash, the training pool (which is
        # what is left after the held-out draw) would have no question on the validation side.
        seed=cfg.split_seed + 1,
        progress=cfg.progress,
    )
    stats = run_synthesis(scfg, corpus=corpus, examples=list(examples), retriever=retriever)
    sizes = {}
    for name, ds in stats.get("datasets", {}).items():
        sizes[name] = {"labeler_rows": ds["labeler"]["rows"], "filter_rows": ds["filter"]["rows"]}
    return sizes


def synthesize_train_sets(
    cfg: QuickstartConfig, paths: QuickstartPaths, held_out_ids: set[str]
) -> tuple[dict[str, Any], list[Example]]:
    """Every ``train_sets`` file synthesized over its own corpus and index (under
    ``work_dir/train/<i>-<dataset>``), then merged into the quickstart's training sets."""
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.retrieval.factory import build_retriever
    from efficientrag.synth.merge import merge_training_sets

    sizes: dict[str, Any] = {}
    examples: list[Example] = []
    dirs = []
    for i, data in enumerate(cfg.train_sets):
        root = paths.root / "train" / f"{i}-{data.dataset}"
        exp = ExperimentConfig(work_dir=str(root), data=data, retriever=cfg.retriever)
        pooled = prepare_data(exp)
        leaked = sorted({ex.id for ex in pooled.examples} & held_out_ids)
        if leaked:
            raise ConfigError(
                f"train_sets[{i}] ({data.path}): {len(leaked)} of its questions are also evaluated "
                f"(data.path={cfg.data.path}), e.g. {leaked[0]!r}; train and evaluate on different files"
            )
        retriever = build_retriever(cfg.retriever, pooled.corpus, exp.index_dir)
        sub = QuickstartPaths(root)
        sizes[f"{i}-{data.dataset}"] = synthesize(
            replace(cfg, data=data), sub, pooled.corpus, pooled.examples, retriever
        )
        dirs.append(sub.synth)
        examples.extend(pooled.examples)
    counts = merge_training_sets(dirs, paths.synth)
    log.info("merged training sets of %d files: %s", len(dirs), counts)
    return sizes, examples


def evaluate_direct(
    cfg: QuickstartConfig, retriever: Retriever, examples: Sequence[Example], out_dir: Path
) -> dict[str, Any]:
    """Direct-R on ``examples`` at ``cfg.ks`` (:func:`efficientrag.eval.job_runs.evaluate_ranked_run`);
    the quickstart owns its run folders, so one made under other inputs is evaluated again."""
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.job_runs import evaluate_ranked_run

    return evaluate_ranked_run(
        DirectRetrieval.ranking(retriever, cfg.ks),
        examples,
        out_dir,
        ks=cfg.ks,
        batch_size=cfg.batch_size,
        progress=cfg.progress,
        meta=_meta(cfg),
    ).metrics


def evaluate_efficientrag(
    cfg: QuickstartConfig,
    rag_cfg: EfficientRAGConfig,
    retriever: Retriever,
    examples: Sequence[Example],
    out_dir: Path,
    *,
    rag: Any = None,
) -> dict[str, Any]:
    """EfficientRAG's retrieval on ``examples`` (:func:`efficientrag.eval.job_runs.evaluate_efficientrag_run`).
    ``rag`` (an already loaded :class:`EfficientRAG`) saves reloading the models per setting."""
    from efficientrag.eval.job_runs import evaluate_efficientrag_run

    return evaluate_efficientrag_run(
        rag_cfg,
        retriever,
        examples,
        out_dir,
        rag=rag,
        batch_size=cfg.batch_size,
        progress=cfg.progress,
        meta=_meta(cfg),
    ).metrics


def _meta(cfg: QuickstartConfig) -> dict[str, Any]:
    return {"dataset": cfg.data.dataset, "split": "held-out"}


# -- output ---------------------------------------------------------------------------------------


def comparison_table(
    dataset: str, direct: dict[str, Any], efficient: Sequence[tuple[str, dict[str, Any]]]
) -> str:
    """Direct-R at every cut-off and each EfficientRAG setting, one row each, same columns."""
    lines = [
        "| method | dataset | n | K (avg chunks) | recall | all-gold | answer recall |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, agg in sorted(direct["retrieval"].items(), key=lambda kv: int(kv[0])):
        lines.append(_table_row(f"Direct-R@{k}", dataset, agg))
    for label, summary in efficient:
        lines.append(_table_row(label, dataset, summary["retrieval"]["all"]))
    return "\n".join(lines)


def plot_comparison(
    direct: dict[str, Any],
    efficient: Sequence[tuple[str, dict[str, Any]]],
    path: Path,
    *,
    title: str = "",
) -> Path:
    from efficientrag.eval.plots import Point, plot_recall_vs_chunks

    curve = [(agg["num_chunks"], agg["recall"]) for agg in direct["retrieval"].values()]
    points = [
        Point(label, s["retrieval"]["all"]["num_chunks"], s["retrieval"]["all"]["recall"])
        for label, s in efficient
    ]
    return plot_recall_vs_chunks({"Direct-R": curve}, points, [], path, title=title)


def _table_row(label: str, dataset: str, agg: dict[str, Any]) -> str:
    return (
        f"| {label} | {dataset} | {agg['n']} | {agg['num_chunks']:.2f} | {agg['recall']:.2f} | "
        f"{agg['all_gold']:.2f} | {agg['answer_recall']:.2f} |"
    )


def _model_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    best = metrics.get("best") or {}
    keep = ("token_precision", "token_recall", "token_f1", "tag_accuracy", "tag_f1")
    return {
        "best_step": metrics.get("best_step"),
        "train_rows": metrics.get("train_rows"),
        "validation_rows": metrics.get("validation_rows"),
        **{k: best[k] for k in keep if k in best},
    }


def _report(cfg: QuickstartConfig, summary: dict[str, Any], table: str, plot: Path) -> str:
    q = summary["questions"]
    lab, fil = summary["labeler"], summary["filter"]
    lines = [
        f"# Quickstart: EfficientRAG vs Direct-R on {cfg.data.dataset}",
        "",
        f"{q['all']} questions over a pooled corpus of {summary['corpus_chunks']} chunks; "
        + (
            f"training data synthesized from {q['train_pool']} questions of other files "
            f"({', '.join(p.path or p.dataset for p in cfg.train_sets)}), each over its own corpus; "
            f"all {q['held_out']} questions are evaluated below."
            if cfg.train_sets
            else f"{q['train_pool']} were used to synthesize training data, {q['held_out']} held-out "
            "questions are evaluated below (no held-out question was seen in training)."
        ),
        "",
        table,
        "",
        f"Labeler (validation split of the synthesized data): token F1 {lab.get('token_f1', 0):.3f}, "
        f"tag accuracy {lab.get('tag_accuracy', 0):.3f} ({lab.get('train_rows')} training rows). "
        f"Filter: token F1 {fil.get('token_f1', 0):.3f} ({fil.get('train_rows')} training rows).",
        "",
        "Times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in summary["timings_s"].items()),
        "",
        f"![recall vs chunks]({plot.name})",
        "",
        "*recall*: share of a question's gold chunks retrieved; *all-gold*: questions with every gold "
        "chunk retrieved; *K*: chunks returned per question; *answer recall*: some returned chunk "
        "contains a gold answer.",
        "",
    ]
    return "\n".join(lines)


def _write_ids(path: Path, examples: Sequence[Example]) -> None:
    write_text_atomic(path, "".join(f"{ex.id}\n" for ex in examples))


class _timed:
    def __init__(self, sink: dict[str, float], name: str) -> None:
        self.sink, self.name = sink, name

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.sink[self.name] = round(time.perf_counter() - self.t0, 2)
