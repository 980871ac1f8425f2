"""FAISS inner-product indexes (flat, IVF, HNSW) filled shard by shard from an embedding store.

All three use the inner product, the paper's metric: for normalized encoders (MiniLM) that is the
cosine, for Contriever the raw dot product it was trained with. Build-time parameters that were
actually used (IVF list count after clamping, HNSW M) go into the index metadata; search-time
ones (``nprobe``, ``efSearch``) come from the config every time an index is opened.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from tqdm.auto import tqdm

from efficientrag.atomic import atomic_path
from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.embedding_store import EmbeddingStore

logger = logging.getLogger(__name__)

INDEX_FILE = "index.faiss"
TRAIN_SEED = 0


def build_index(
    store: EmbeddingStore, cfg: RetrieverConfig, *, show_progress: bool = True
) -> tuple[faiss.Index, dict[str, Any]]:
    """A new index holding every row of ``store`` (row i = corpus position i), and its parameters."""
    dim, n = store.spec.dim, store.num_rows
    params: dict[str, Any] = {}
    if cfg.index_type == "flat":
        index = faiss.IndexFlatIP(dim)
    elif cfg.index_type == "hnsw":
        index = faiss.IndexHNSWFlat(dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = cfg.hnsw_ef_construction
        params = {"m": cfg.hnsw_m, "ef_construction": cfg.hnsw_ef_construction}
    elif cfg.index_type == "ivf":
        n_train = min(n, cfg.ivf_train_size)
        nlist = cfg.ivf_nlist if cfg.ivf_nlist is not None else max(1, round(4 * math.sqrt(n)))
        if nlist > n_train:
            logger.warning(
                "ivf_nlist=%d exceeds the %d training rows; using %d lists", nlist, n_train, n_train
            )
            nlist = n_train
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(TRAIN_SEED)
        sample = np.sort(rng.choice(n, size=n_train, replace=False))
        index.train(store.gather(sample))
        params = {"nlist": nlist, "train_size": n_train}
    else:
        raise InvalidArgumentError(f"unknown index_type {cfg.index_type!r}")
    with tqdm(total=n, desc=f"Building {cfg.index_type} index", unit="row", disable=not show_progress) as bar:
        for _, shard in store.iter_shards():
            index.add(np.ascontiguousarray(shard, dtype=np.float32))
            bar.update(len(shard))
    configure_search(index, cfg)
    return index, params


def configure_search(index: faiss.Index, cfg: RetrieverConfig) -> None:
    """Apply the config's search-time knobs and thread count."""
    if cfg.num_threads is not None:
        faiss.omp_set_num_threads(cfg.num_threads)
    ivf = _as_ivf(index)
    if ivf is not None:
        ivf.nprobe = min(cfg.ivf_nprobe, ivf.nlist)
    if isinstance(index, faiss.IndexHNSW):
        index.hnsw.efSearch = cfg.hnsw_ef_search


def write_index(index: faiss.Index, path: Path) -> None:
    with atomic_path(path) as tmp:
        faiss.write_index(index, str(tmp))


def read_index(path: Path) -> faiss.Index:
    """FAISS's own binary format (no pickle)."""
    return faiss.read_index(str(path))


def index_type_of(index: faiss.Index) -> str:
    if isinstance(index, faiss.IndexHNSW):
        return "hnsw"
    if _as_ivf(index) is not None:
        return "ivf"
    return "flat"


def _as_ivf(index: faiss.Index) -> Any:
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None
