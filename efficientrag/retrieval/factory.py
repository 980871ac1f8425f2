"""One entry point for every caller: a retriever for ``(config, corpus)``, loaded or built, and the
registry of search backends behind it.

A backend is a :class:`SearchBackend`: how it is built over a corpus, how a saved one is opened,
the index folder it gets under a run's ``work_dir``, and how a report names it. The built-in ones
(dense, bm25, hybrid, milvus) are registered here; a new one is one module and one
:func:`register_backend` call, after which ``retriever.kind`` accepts its name and every command
(``index``, ``eval``, ``retrieve``, ``serve``) and the report find it here.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.base import Retriever
from efficientrag.retrieval.bm25 import BM25_DIR, BM25Retriever
from efficientrag.retrieval.config import SEARCH_KINDS, RetrieverConfig
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
    return backend_of(cfg.kind).build(
        cfg, corpus, index_dir, rebuild=rebuild, encoder=encoder, show_progress=show_progress
    )


def _build_milvus(cfg: RetrieverConfig, corpus: Corpus, index_dir: str | Path | None, **kw: Any) -> Retriever:
    """``kw``: ``build_retriever``'s ``rebuild``, ``encoder``, ``show_progress``."""
    from efficientrag.retrieval.milvus.retriever import MilvusRetriever

    return MilvusRetriever.build(cfg, corpus, index_dir, **kw)


def _build_hybrid(cfg: RetrieverConfig, corpus: Corpus, index_dir: str | Path | None, **kw: Any) -> Retriever:
    """``kw``: ``build_retriever``'s ``rebuild``, ``encoder``, ``show_progress``."""
    # Each half keeps its own folder (and its own metadata checks) under the hybrid's.
    parts = [
        build_retriever(
            replace(cfg, kind=kind, index_dir=None),
            corpus,
            None if index_dir is None else Path(index_dir) / kind,
            **kw,
        )
        for kind in ("dense", "bm25")
    ]
    return _hybrid(cfg, parts)


def _build_local(
    cfg: RetrieverConfig,
    corpus: Corpus,
    index_dir: str | Path | None,
    *,
    rebuild: bool,
    encoder: Encoder | None,
    show_progress: bool,
) -> Retriever:
    """A dense or BM25 index: loaded when the folder holds one, else built (and saved there)."""
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
    backend = backend_of(cfg.kind)
    if corpus is None and not backend.holds_chunks:
        raise InvalidArgumentError(
            f"a {cfg.kind} index is searched with its corpus; pass the corpus it was built from"
        )
    return backend.load(
        cfg, corpus, index_dir, encoder=encoder, show_progress=show_progress, corpus_name=corpus_name
    )


def _load_milvus(
    cfg: RetrieverConfig, corpus: Corpus | None, index_dir: str | Path | None, **kw: Any
) -> Retriever:
    """``kw``: ``load_retriever``'s ``encoder``, ``show_progress``, ``corpus_name``."""
    from efficientrag.retrieval.milvus.retriever import MilvusRetriever

    return MilvusRetriever.open(cfg, index_dir, corpus=corpus, **kw)


def _load_local(
    cfg: RetrieverConfig,
    corpus: Corpus,
    index_dir: str | Path | None,
    *,
    encoder: Encoder | None,
    show_progress: bool,
    corpus_name: str | None,
) -> Retriever:
    if index_dir is None:
        raise InvalidArgumentError("load_retriever needs an index_dir (argument or cfg.index_dir)")
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


@dataclass(frozen=True)
class SearchBackend:
    """One search backend, as the commands and the report use it.

    Attributes:
        kind: The name ``retriever.kind`` gives.
        build: ``(cfg, corpus, index_dir, *, rebuild, encoder, show_progress) -> Retriever``: the
            index loaded when ``index_dir`` holds one, else built (and saved there).
        load: ``(cfg, corpus, index_dir, *, encoder, show_progress, corpus_name) -> Retriever``:
            a saved index opened (``IndexNotFoundError`` when there is none).
        index_name: ``cfg -> str``: the index folder's name under a run's ``work_dir/index``.
        describe: ``retriever section (saved config, plain data) -> str``: how a report names it.
        holds_chunks: The backend keeps the chunks itself (a Milvus collection): a question can be
            asked with no corpus read, and ``efficientrag index`` is what fills it.
    """

    kind: str
    build: Callable[..., Retriever]
    load: Callable[..., Retriever]
    index_name: Callable[[RetrieverConfig], str]
    describe: Callable[[Mapping[str, Any]], str]
    holds_chunks: bool = False


def _dense_name(cfg: RetrieverConfig) -> str:
    encoder = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(cfg.encoder.rstrip("/")).name)
    return f"dense-{encoder}-{cfg.index_type}"


BACKENDS: dict[str, SearchBackend] = {
    b.kind: b
    for b in (
        SearchBackend(
            "dense", _build_local, _load_local, _dense_name, lambda c: f"retriever dense:{c.get('encoder')}"
        ),
        SearchBackend("bm25", _build_local, _load_local, lambda cfg: "bm25", lambda c: "retriever BM25"),
        SearchBackend(
            "hybrid",
            _build_hybrid,
            _load_local,
            lambda cfg: f"hybrid-{_dense_name(cfg)}-bm25",
            lambda c: f"retriever hybrid (RRF) dense:{c.get('encoder')} + BM25",
        ),
        SearchBackend(
            "milvus",
            _build_milvus,
            _load_milvus,
            lambda cfg: "milvus",
            lambda c: f"retriever milvus:{(c.get('milvus') or {}).get('collection')}",
            holds_chunks=True,
        ),
    )
}


def register_backend(backend: SearchBackend) -> None:
    """Make ``backend.kind`` a search backend every command and the report know.

    Args:
        backend: Its build, load, index folder name and report name.

    Raises:
        ValueError: The kind is taken.
    """
    if backend.kind in BACKENDS:
        raise InvalidArgumentError(f"search backend {backend.kind!r} is already registered")
    BACKENDS[backend.kind] = backend
    SEARCH_KINDS.add(backend.kind)


def backend_of(kind: str) -> SearchBackend:
    """The registered backend called ``kind``.

    Raises:
        ValueError: None is, naming the registered ones.
    """
    backend = BACKENDS.get(kind)
    if backend is None:
        raise InvalidArgumentError(
            f"retriever.kind {kind!r} is not a registered search backend ({', '.join(sorted(BACKENDS))})"
        )
    return backend
