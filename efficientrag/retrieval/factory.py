"""One entry point for every caller: a retriever for ``(config, corpus)``, loaded or built."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from efficientrag.data.corpus import Corpus
from efficientrag.retrieval.base import Retriever
from efficientrag.retrieval.bm25 import BM25_DIR, BM25Retriever
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.dense import DenseRetriever
from efficientrag.retrieval.encoder import Encoder
from efficientrag.retrieval.faiss_index import INDEX_FILE
from efficientrag.retrieval.hybrid import HybridRetriever
from efficientrag.retrieval.meta import IDS_FILE, META_FILE


def build_retriever(
    cfg: RetrieverConfig,
    corpus: Corpus,
    index_dir: str | Path | None = None,
    *,
    rebuild: bool = False,
    encoder: Encoder | None = None,
    show_progress: bool = True,
) -> Retriever:
    """Load the index at ``index_dir`` (default ``cfg.index_dir``) if there is one, else build and
    save it; build in memory when there is no folder at all.

    An existing index built with other settings raises IndexMismatchError rather than being
    overwritten (it may have cost hours); ``rebuild=True`` replaces it. A dense rebuild reuses
    saved embeddings that still match the encoder and corpus (e.g. to switch flat -> hnsw) and
    discards ones that do not. An interrupted dense build resumes from its last complete shard.
    """
    index_dir = index_dir if index_dir is not None else cfg.index_dir
    if cfg.kind == "milvus":
        from efficientrag.retrieval.milvus.retriever import MilvusRetriever

        return MilvusRetriever.build(
            cfg, corpus, index_dir, rebuild=rebuild, encoder=encoder, show_progress=show_progress
        )
    if cfg.kind == "hybrid":
        # Each half keeps its own folder (and its own metadata checks) under the hybrid's.
        parts = [
            build_retriever(
                replace(cfg, kind=kind, index_dir=None),
                corpus,
                None if index_dir is None else Path(index_dir) / kind,
                rebuild=rebuild,
                encoder=encoder,
                show_progress=show_progress,
            )
            for kind in ("dense", "bm25")
        ]
        return _hybrid(cfg, parts)
    if index_dir is None:
        return _build(cfg, corpus, None, encoder=encoder, show_progress=show_progress, rebuild=rebuild)
    index_dir = Path(index_dir)
    if rebuild:
        _remove_index_files(index_dir)
    elif (index_dir / META_FILE).is_file():
        return load_retriever(cfg, corpus, index_dir, encoder=encoder, show_progress=show_progress)
    return _build(cfg, corpus, index_dir, encoder=encoder, show_progress=show_progress, rebuild=rebuild)


def load_retriever(
    cfg: RetrieverConfig,
    corpus: Corpus | None,
    index_dir: str | Path | None = None,
    *,
    encoder: Encoder | None = None,
    show_progress: bool = True,
) -> Retriever:
    """Open a saved index; IndexNotFoundError if there is none, IndexMismatchError if it was built
    with other settings or another corpus. A Milvus collection needs no ``corpus`` (None): its hits
    carry their chunks."""
    index_dir = index_dir if index_dir is not None else cfg.index_dir
    if cfg.kind == "milvus":
        from efficientrag.retrieval.milvus.retriever import MilvusRetriever

        return MilvusRetriever.open(cfg, index_dir, encoder=encoder, show_progress=show_progress)
    if corpus is None:
        raise ValueError(f"a {cfg.kind} index is searched with its corpus; pass the corpus it was built from")
    if index_dir is None:
        raise ValueError("load_retriever needs an index_dir (argument or cfg.index_dir)")
    if cfg.kind == "hybrid":
        parts = [
            load_retriever(
                replace(cfg, kind=kind, index_dir=None),
                corpus,
                Path(index_dir) / kind,
                encoder=encoder,
                show_progress=show_progress,
            )
            for kind in ("dense", "bm25")
        ]
        return _hybrid(cfg, parts)
    if cfg.kind == "bm25":
        return BM25Retriever.load(index_dir, corpus, cfg)
    return DenseRetriever.load(index_dir, corpus, cfg, encoder=encoder, show_progress=show_progress)


def _hybrid(cfg: RetrieverConfig, parts: list[Retriever]) -> HybridRetriever:
    return HybridRetriever(parts, rrf_k=cfg.hybrid_rrf_k, depth=cfg.hybrid_depth, weights=cfg.hybrid_weights)


def _build(
    cfg: RetrieverConfig,
    corpus: Corpus,
    index_dir: Path | None,
    *,
    encoder: Encoder | None,
    show_progress: bool,
    rebuild: bool,
) -> Retriever:
    if cfg.kind == "bm25":
        return BM25Retriever.build(corpus, cfg, index_dir, show_progress=show_progress)
    return DenseRetriever.build(
        corpus, cfg, index_dir, encoder=encoder, reset_stale_embeddings=rebuild, show_progress=show_progress
    )


def _remove_index_files(index_dir: Path) -> None:
    """Only the files an index consists of: the folder may hold other things of the user's."""
    for name in (META_FILE, IDS_FILE, INDEX_FILE):
        (index_dir / name).unlink(missing_ok=True)
    if (index_dir / BM25_DIR).is_dir():
        shutil.rmtree(index_dir / BM25_DIR)
