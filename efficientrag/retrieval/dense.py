"""Dense retrieval: a sentence-transformers encoder over a FAISS inner-product index.

Index folder: ``meta.json`` (encoder, dim, normalization, pooling, index type and parameters,
corpus size and fingerprint, versions), ``ids.json`` (chunk ids in row order), ``index.faiss``,
and ``embeddings/`` (the resumable shards the index was filled from; see embedding_store.py).

Empty or whitespace-only queries get no hits (``[]``) instead of an error or arbitrary chunks:
they carry no information, and one bad query must not stop a long evaluation run.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from efficientrag.data.corpus import Corpus
from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.base import Hit
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.embedding_store import EmbeddingStore, StoreSpec
from efficientrag.retrieval.encoder import Encoder, canonical_encoder_name, warn_over_limit
from efficientrag.retrieval.errors import IndexMismatchError, IndexNotFoundError
from efficientrag.retrieval.faiss_index import (
    INDEX_FILE,
    build_index,
    configure_search,
    read_index,
    write_index,
)
from efficientrag.retrieval.meta import META_FILE, check_corpus, check_field, load_meta, new_meta, save_meta
from efficientrag.retrieval.queries import check_search_args
from efficientrag.run_lock import path_lock

EMBEDDINGS_DIR = "embeddings"
INDEX_LOCK_HINT = "wait for it to finish (or build with wait_for_lock=True), then rerun"
# Cosine between the probe embedding saved at build time and the one computed at load time,
# below which the encoder's weights are taken to differ (bfloat16 vs float32 gives ~0.99997).
PROBE_MIN_COSINE = 0.999


class DenseRetriever:
    """Batched top-k inner-product search over ``corpus`` (see the module docstring).

    Most code gets one from :meth:`build` or :meth:`load` (or ``build_retriever``).

    Args:
        corpus: The chunks, in index row order.
        encoder: The encoder that embeds queries (the one the index was built with).
        index: The FAISS inner-product index, one row per chunk.
        meta: The index's description, as saved in ``meta.json``.

    Raises:
        ValueError: The index and the corpus differ in size.
    """

    kind = "dense"

    def __init__(self, corpus: Corpus, encoder: Encoder, index: faiss.Index, meta: dict[str, Any]) -> None:
        if index.ntotal != len(corpus):
            raise InvalidArgumentError(
                f"index has {index.ntotal} rows but the corpus has {len(corpus)} chunks"
            )
        self.corpus = corpus
        self.encoder = encoder
        self.index = index
        self.meta = meta
        self.last_timings: dict[str, float] = {}

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        cfg: RetrieverConfig | None = None,
        index_dir: str | Path | None = None,
        *,
        encoder: Encoder | None = None,
        reset_stale_embeddings: bool = False,
        show_progress: bool = True,
        wait_for_lock: bool = True,
    ) -> DenseRetriever:
        """Encode ``corpus`` and index it; saved to ``index_dir`` when given, else in memory.

        With ``index_dir``, embeddings are written shard by shard under ``embeddings/`` and a rerun
        after a crash encodes only the missing shards. Shards written for another encoder or
        corpus raise :class:`IndexMismatchError` unless ``reset_stale_embeddings``.
        ``encoder``: an already loaded encoder (its settings win over the config's).
        ``wait_for_lock``: another process building in ``index_dir`` is waited for (the default),
        or refused (:class:`~efficientrag.run_lock.FolderLockedError`).

        Args:
            corpus: The chunks to index.
            cfg: Encoder and index settings (None: the defaults).
            index_dir: Where to save the index (None: in memory only).
            encoder: An already loaded encoder.
            reset_stale_embeddings: Discard saved embeddings made by another encoder or corpus
                instead of failing.
            show_progress: Show progress bars.
            wait_for_lock: Wait for another process building in ``index_dir`` (else refuse).

        Returns:
            The retriever, saved to ``index_dir`` when given.

        Raises:
            ValueError: The corpus is empty.
            IndexMismatchError: Saved embeddings do not match (and ``reset_stale_embeddings`` is False).
            FolderLockedError: Another process is building there and ``wait_for_lock`` is False.
        """
        cfg = cfg or RetrieverConfig()
        if len(corpus) == 0:
            raise InvalidArgumentError("cannot index an empty corpus")
        encoder = encoder or Encoder.from_config(cfg, show_progress=show_progress)
        warn_over_limit(corpus, encoder)
        spec = StoreSpec.for_corpus(encoder, corpus, cfg.shard_size)
        if index_dir is None:
            with tempfile.TemporaryDirectory(prefix="efficientrag-emb-") as tmp:
                store = EmbeddingStore.open(tmp, spec)
                store.fill(corpus, encoder, show_progress=show_progress)
                index, params = build_index(store, cfg, show_progress=show_progress)
            return cls(corpus, encoder, index, _dense_meta(corpus, encoder, cfg, params))

        index_dir = Path(index_dir)
        index_dir.mkdir(parents=True, exist_ok=True)
        # One builder at a time: another one's cleanup would delete this one's shard in flight.
        # A second builder waits (the shards it finds then are complete), or with
        # ``wait_for_lock=False`` is refused naming the first. The lock file is kept beside the
        # folder, whose listing is the index's own files.
        lock = index_dir.absolute().with_name(f".{index_dir.absolute().name}.lock")
        with path_lock(lock, wait=wait_for_lock, what=f"index folder {index_dir}", hint=INDEX_LOCK_HINT):
            # The old description goes first: a crash below must not leave it vouching for new files.
            (index_dir / META_FILE).unlink(missing_ok=True)
            store = EmbeddingStore.open(index_dir / EMBEDDINGS_DIR, spec, reset_stale=reset_stale_embeddings)
            store.fill(corpus, encoder, show_progress=show_progress)
            index, params = build_index(store, cfg, show_progress=show_progress)
            retriever = cls(corpus, encoder, index, _dense_meta(corpus, encoder, cfg, params))
            retriever.save(index_dir)
            if not cfg.keep_embeddings:
                store.remove()
        return retriever

    @classmethod
    def load(
        cls,
        index_dir: str | Path,
        corpus: Corpus,
        cfg: RetrieverConfig | None = None,
        *,
        encoder: Encoder | None = None,
        show_progress: bool = True,
    ) -> DenseRetriever:
        """Open a saved index, checking it was built for this corpus with this encoder setup.

        Raises :class:`IndexMismatchError` naming the first differing field (corpus fingerprint,
        encoder, dim, normalize, max_length, passage_prefix, index_type, encoder weights), and
        :class:`IndexNotFoundError` when there is no complete index.

        Args:
            index_dir: The index folder.
            corpus: The corpus it was built from.
            cfg: The settings it is expected to have (None: the defaults).
            encoder: An already loaded encoder (else loaded from ``cfg``).
            show_progress: Show a progress bar while loading the encoder.

        Returns:
            The retriever.

        Raises:
            IndexMismatchError: A setting, the corpus or the encoder's weights differ.
            IndexNotFoundError: There is no complete index.
        """
        cfg = cfg or RetrieverConfig()
        index_dir = Path(index_dir)
        meta = load_meta(index_dir, cls.kind)
        where = index_dir / META_FILE
        # Cheap checks first: no need to load a model to learn that the corpus is another one.
        check_corpus(index_dir, meta, corpus)
        check_field(where, meta, "index_type", cfg.index_type)
        requested_name = encoder.name if encoder is not None else canonical_encoder_name(cfg.encoder)
        check_field(where, meta, "encoder", requested_name)
        encoder = encoder or Encoder.from_config(cfg, show_progress=show_progress)
        for field, value in encoder.describe().items():
            if field != "pooling":
                check_field(where, meta, field, value)
        check_encoder_probe(
            where,
            meta.get("encoder_probe"),
            encoder,
            f"probe embedding of {meta.get('encoder')!r} at build time",
        )
        path = index_dir / INDEX_FILE
        if not path.is_file():
            raise IndexNotFoundError(index_dir, f"{INDEX_FILE} is missing")
        index = read_index(path)
        if index.d != encoder.dim or index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise IndexMismatchError(
                path, "dim/metric", (index.d, index.metric_type), (encoder.dim, "inner product")
            )
        configure_search(index, cfg)
        return cls(corpus, encoder, index, meta)

    def save(self, index_dir: str | Path) -> None:
        """Write ``index.faiss``, ``ids.json`` and, last, ``meta.json``.

        ``meta.json`` goes last so that a crash half-way leaves no folder that claims to be complete.

        Args:
            index_dir: The folder (created if needed).
        """
        index_dir = Path(index_dir)
        index_dir.mkdir(parents=True, exist_ok=True)
        (index_dir / META_FILE).unlink(missing_ok=True)
        write_index(self.index, index_dir / INDEX_FILE)
        save_meta(index_dir, self.meta, self.corpus.ids)

    # ------------------------------------------------------------------------------------------

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top-``k`` hits per query by descending inner product (one encode call, one FAISS
        search). ``k`` is clamped to the corpus size; empty queries get ``[]``.

        Args:
            queries: The queries.
            k: Hits per query at most.

        Returns:
            One list of hits per query, best first.
        """
        queries, k = check_search_args(queries, k)
        results: list[list[Hit]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]
        k = min(k, self.index.ntotal)
        if not live or k == 0:
            self.last_timings = {"encode": 0.0, "search": 0.0}
            return results
        t0 = time.perf_counter()
        emb = self.encoder.encode_queries([queries[i] for i in live])
        t1 = time.perf_counter()
        scores, rows = self.index.search(emb, k)
        self.last_timings = {"encode": t1 - t0, "search": time.perf_counter() - t1}
        chunks = self.corpus.chunks
        for j, i in enumerate(live):
            results[i] = [
                Hit(chunks[r], float(s)) for s, r in zip(scores[j], rows[j].tolist(), strict=True) if r >= 0
            ]
        return results


def _dense_meta(
    corpus: Corpus, encoder: Encoder, cfg: RetrieverConfig, params: dict[str, Any]
) -> dict[str, Any]:
    import sentence_transformers

    meta = new_meta(DenseRetriever.kind, corpus)
    meta.update(encoder.describe())
    meta.update(
        {
            "metric": "inner_product",
            "index_type": cfg.index_type,
            "index_params": params,
            "compute_dtype": encoder.compute_dtype,
            "query_prefix": encoder.query_prefix,
            "encoder_probe": encode_vector(encoder.probe()),
            "faiss_version": faiss.__version__,
            "sentence_transformers_version": sentence_transformers.__version__,
        }
    )
    return meta


def encode_vector(vec: np.ndarray) -> str:
    """A float32 vector as base64 text: exact, and one line of meta.json instead of hundreds."""
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: Any) -> np.ndarray | None:
    if not isinstance(text, str):
        return None
    try:
        return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float64)
    except (ValueError, binascii.Error):
        return None


def check_encoder_probe(where: Path | str, encoded_probe: Any, encoder: Encoder, saved_as: str) -> None:
    """Same encoder name, other weights (a fine-tuned copy saved under the old name) would search
    the index with vectors from another space; the probe sentence's embedding tells them apart."""
    saved = decode_vector(encoded_probe)
    if saved is None or saved.shape != (encoder.dim,):
        return
    now = encoder.probe().astype(np.float64)
    cosine = float(saved @ now / max(np.linalg.norm(saved) * np.linalg.norm(now), 1e-12))
    if cosine < PROBE_MIN_COSINE:
        raise IndexMismatchError(
            where,
            "encoder weights",
            saved_as,
            f"a different one now (cosine {cosine:.4f})",
        )
