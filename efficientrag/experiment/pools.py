"""Data files prepared the way an experiment prepares its data, one pool per file.

TreeHop's and the reranker's training jobs train on pools, and the benchmarks' protocol evaluates
on them: each file read, pooled into its own corpus under ``<root>/<name>`` (re-read only when the
file changes) and indexed with the run's search (built once, kept on disk), so negatives and
searches never reach another file's paragraphs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from efficientrag.data.config import DataConfig
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import prepare_data
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.training.pool import Pool


def open_pool(
    name: str, data: DataConfig, retriever: RetrieverConfig, root: str | Path, *, progress: bool = True
) -> Pool:
    """One data file (with its extra sources) pooled into a corpus with its own index.

    Args:
        name: The pool's name and its folder under ``root``.
        data: The file to read (``data.extra`` files are pooled into the same corpus).
        retriever: The search to index the corpus with (its ``index_dir`` is ignored: the pool keeps
            its index in its own folder).
        root: Where the pool's folder goes.
        progress: Show progress bars while indexing.

    Returns:
        The pool: its corpus, questions and search.
    """
    from efficientrag.retrieval.factory import build_retriever  # faiss and bm25s: only when asked

    exp = ExperimentConfig(
        work_dir=str(Path(root) / name), data=data, retriever=replace(retriever, index_dir=None)
    )
    pooled = prepare_data(exp)
    search = build_retriever(exp.retriever, pooled.corpus, exp.index_dir, show_progress=progress)
    return Pool(name, pooled.corpus, list(pooled.examples), search)


def open_pools(
    train_sets: Sequence[DataConfig],
    retriever: RetrieverConfig,
    work_dir: str | Path,
    *,
    progress: bool = True,
) -> list[Pool]:
    """Every training file pooled into its own corpus with its own index (built once, cached).

    Args:
        train_sets: The training files; file ``i`` is prepared under ``work_dir/pools/<i>-<dataset>``.
        retriever: The search to index each corpus with.
        work_dir: Where the pools go.
        progress: Show progress bars while indexing.

    Returns:
        One pool per training file, in the order of ``train_sets``.
    """
    root = Path(work_dir) / "pools"
    return [
        open_pool(f"{i}-{data.dataset}", data, retriever, root, progress=progress)
        for i, data in enumerate(train_sets)
    ]
