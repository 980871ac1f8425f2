"""The methods ``retrieval_rerank.py`` compares, built over one pool, and their seconds per question
measured side by side in one process (the runs' own stage timings come from different days and
loads, so they are not compared with each other)."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import rerank_treehop
from retrieval_efficientrag import Pool

KS = [2, 3, 4, 5, 6, 7, 8, 10, 20]  # the ranked methods' cut-offs
NS = (20, 50)  # how many of the question's hits a reranker scores
FUSIONS = ("none", "rrf")  # a reranker alone, or fused with the search's order (the first wins ties)
# Where a reranker's fusion is chosen: K = 6, as the cross-encoder's recipe is.
FUSION_K = 6
# The search's own order, as a row of the validation scores.
SEARCH_ROW = "the search's own order"
# set -> row name -> fusion -> (recall + all-gold) / 2 at FUSION_K, in %
Scores = dict[str, dict[str, dict[str, float]]]
TIMING_BATCH = 32  # questions per call when every method is timed side by side (--time-sample)


def rerankers(
    pool: Pool,
    models: Path,
    reranker: Path,
    fusion: str | Mapping[str, str] = "none",
    only: Collection[str] | None = None,
) -> dict[str, tuple[Any, str]]:
    """Row name -> (the built method, its run folder's name): both scorers at every N, each fused
    with the search's order as ``fusion`` says (one value for all rows, or one per row name; a row
    it does not name is not fused). A fused row's folder ends in ``-rrf``. ``only``: build just
    these rows (each loads its model when built)."""
    from efficientrag.baselines.labeler_rerank import LabelerRerank, LabelerRerankConfig
    from efficientrag.baselines.rerank import Rerank, RerankConfig

    labeler = str(models / "labeler" / "best")
    out = {}
    for n in NS:
        rows = {
            f"rerank N={n}": (Rerank, RerankConfig, {"model": str(reranker)}, f"rerank-n{n}"),
            f"Labeler rerank N={n}": (
                LabelerRerank,
                LabelerRerankConfig,
                {"labeler": labeler},
                f"labeler-rerank-n{n}",
            ),
        }
        for name, (cls, config, model, folder) in rows.items():
            if only is not None and name not in only:
                continue
            fused = fusion if isinstance(fusion, str) else fusion.get(name, "none")
            method = cls(pool.retriever, None, config(**model, top_n=n, fusion=fused))
            out[name] = (method, fused_folder(folder, fused))
    return out


def fused_folder(folder: str, fusion: str) -> str:
    """A reranker row's run folder under ``fusion``: a fused run never shares the plain one's."""
    return folder if fusion == "none" else f"{folder}-{fusion}"


def time_side_by_side(
    pool: Pool,
    models: Path,
    reranker: Path,
    loops: dict[str, tuple[str, list[str]]],
    examples: list,
    skip: Collection[str] = (),
    treehop: rerank_treehop.TreeHopRows | None = None,
    fusion: str | Mapping[str, str] = "none",
) -> dict[str, float]:
    """Seconds per question of every method on the same ``examples``, one after another in this
    process: models loaded first (not timed), no prediction cache, batches of ``TIMING_BATCH``.
    The runs' own stage timings were taken whenever each run was made (a cached run keeps the
    cores' load of its day); these are comparable with each other. Methods named in ``skip`` (timed
    by another call) are left out; ``treehop``'s rows are timed too; the rerankers fused as
    ``fusion`` says."""
    from efficientrag.config import load_config
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG

    questions = [ex.question for ex in examples]
    batches = [slice(lo, lo + TIMING_BATCH) for lo in range(0, len(examples), TIMING_BATCH)]
    labeler = Labeler.from_pretrained(models / "labeler" / "best")
    filter_ = Filter.from_pretrained(models / "filter" / "best")
    work: dict[str, Any] = {
        "Direct-R": lambda: [pool.retriever.search(questions[b], max(KS)) for b in batches],
    }
    for name, (_, overrides) in loops.items():
        rag = EfficientRAG(pool.retriever, labeler, filter_, load_config(EfficientRAGConfig, None, overrides))
        work[name] = lambda rag=rag: [rag.retrieve_batch(questions[b]) for b in batches]
    for name, (method, _) in rerankers(pool, models, reranker, fusion).items():
        if name in skip:
            continue
        method.setup()
        work[name] = lambda method=method: [method.run_batch(examples[b]) for b in batches]
    if treehop is not None:
        work |= rerank_treehop.timers(treehop, pool, questions, batches)
    seconds = {}
    for name, run in work.items():
        if name in skip:
            continue
        started = time.perf_counter()
        run()
        seconds[name] = (time.perf_counter() - started) / len(examples)
    return seconds
