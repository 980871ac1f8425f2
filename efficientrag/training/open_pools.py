"""Training files prepared the way an experiment prepares its data, one pool per file.

TreeHop's and the reranker's training scripts both train on pools: each training file read,
pooled into its own corpus under ``<work_dir>/pools/<i>-<dataset>`` (re-read only when the file
changes) and indexed with the run's retriever (built once, kept on disk). Preparing the data goes
through :func:`efficientrag.eval.prepared_data.prepare_data`, which makes this module an entry point (layer
7 in ``.ci/check_layers.py``), above the training code that takes the pools it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from efficientrag.data.config import DataConfig
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.training.pool import Pool


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
        retriever: The search to index each corpus with (its ``index_dir`` is ignored: each pool
            keeps its index in its own folder).
        work_dir: Where the pools go.
        progress: Show progress bars while indexing.

    Returns:
        One pool per training file, in the order of ``train_sets``.
    """
    from efficientrag.eval.experiment import ExperimentConfig
    from efficientrag.eval.prepared_data import prepare_data
    from efficientrag.retrieval.factory import build_retriever

    pools = []
    for i, data in enumerate(train_sets):
        name = f"{i}-{data.dataset}"
        exp = ExperimentConfig(
            work_dir=str(Path(work_dir) / "pools" / name),
            data=data,
            retriever=replace(retriever, index_dir=None),
        )
        pooled = prepare_data(exp)
        search = build_retriever(exp.retriever, pooled.corpus, exp.index_dir, show_progress=progress)
        pools.append(Pool(name, pooled.corpus, list(pooled.examples), search))
    return pools
