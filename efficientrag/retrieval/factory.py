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

    Args:
        cfg: The retriever's settings; ``kind`` picks dense, bm25, hybrid or milvus.
        corpus: The chunks to index.
        index_dir: The index folder (None: ``cfg.index_dir``; both None: in memory).
        rebuild: Replace an existing index instead of loading it.
        encoder: An already loaded encoder to use (its settings win over the config's).
        show_progress: Show progress bars while encoding and indexing.

    Returns:
        A retriever over ``corpus`` (a ``HybridRetriever`` for ``kind="hybrid"``).

    Raises:
        IndexMismatchError: The saved index or embeddings were built with other settings or
            another corpus (and ``rebuild`` is False).
        ValueError: The corpus is empty.
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
    corpus_name: str | None = None,
) -> Retriever:
    """Open a saved index; IndexNotFoundError if there is none, IndexMismatchError if it was built
    with other settings or another corpus. A Milvus collection needs no ``corpus`` (None): its hits
    carry their chunks; given one, the collection must have been filled from it (unless
    ``retriever.milvus.foreign_collection``).

    Args:
        cfg: The settings the index was built with (they are checked against its metadata).
        corpus: The corpus the index was built from (None only for Milvus).
        index_dir: The index folder (None: ``cfg.index_dir``).
        encoder: An already loaded encoder to use.
        show_progress: Show progress bars (loading the encoder).
        corpus_name: How errors name ``corpus`` (its file), for a Milvus collection.

    Returns:
        A retriever over the saved index.

    Raises:
        IndexNotFoundError: There is no complete index in the folder.
        IndexMismatchError: It was built with other settings or another corpus.
        ValueError: No corpus (for a local index) or no folder was given.
    """
    index_dir = index_dir if index_dir is not None else cfg.index_dir
    if cfg.kind == "milvus":
        from efficientrag.retrieval.milvus.retriever import MilvusRetriever

        return MilvusRetriever.open(
            cfg,
            index_dir,
            encoder=encoder,
            show_progress=show_progress,
            corpus=corpus,
            corpus_name=corpus_name,
        )
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
