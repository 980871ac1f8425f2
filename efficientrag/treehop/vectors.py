"""What TreeHop needs from a dense index: question vectors, chunk vectors by row, and a vector search.

TreeHop runs on the vectors the index was built from, never on text, so it takes a
:class:`~efficientrag.retrieval.dense.DenseRetriever` (encoder + FAISS index) and reads chunk
vectors back out of the index (FAISS ``reconstruct``; IVF indexes get a direct map first). A model
trained over one encoder is meaningless over another: :func:`check_compatible` refuses that pairing
with a one-line error before any question is run.
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np

from efficientrag.errors import ConfigError
from efficientrag.retrieval.encoder import canonical_encoder_name
from efficientrag.treehop.configuration import TreeHopConfig


class IndexVectors:
    """Search and vector lookup over one dense retriever's FAISS index and corpus."""

    def __init__(self, retriever: Any) -> None:
        index = getattr(retriever, "index", None)
        encoder = getattr(retriever, "encoder", None)
        if index is None or encoder is None:
            kind = getattr(retriever, "kind", type(retriever).__name__)
            raise ConfigError(
                f"TreeHop works on embeddings and needs a dense retriever (retriever.kind=dense), "
                f"got {kind!r}: BM25 and hybrid indexes hold no vectors to update"
            )
        self.retriever = retriever
        self.index = index
        self.encoder = encoder
        self.corpus = retriever.corpus
        self.dim = int(index.d)
        ivf = _ivf_of(index)
        if ivf is not None:
            # Reconstructing rows of an IVF index needs the id -> list map.
            ivf.make_direct_map()

    def encode_questions(self, questions: list[str]) -> np.ndarray:
        return self.encoder.encode_queries(questions)

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)``, both ``(len(vectors), k)``, rows sorted by descending inner product;
        a row of -1 marks a missing hit (corpus smaller than k)."""
        k = min(k, self.index.ntotal)
        return self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        return self.index.reconstruct_batch(rows)

    def describe(self) -> dict[str, Any]:
        return {
            "encoder": self.encoder.name,
            "dim": self.dim,
            "normalize": bool(self.encoder.normalize),
            "corpus_fingerprint": self.corpus.fingerprint(),
            "index_ntotal": int(self.index.ntotal),
        }


def check_compatible(config: TreeHopConfig, vectors: IndexVectors, *, where: str = "TreeHop model") -> None:
    """The model's embedding width and encoder must be the index's."""
    if config.embed_dim != vectors.dim:
        raise ConfigError(
            f"{where}: embed_dim {config.embed_dim} does not match the index's dimension {vectors.dim} "
            f"(encoder {vectors.encoder.name!r}); train TreeHop over this encoder or use the index it was "
            "trained with"
        )
    if not config.encoder_name:
        raise ConfigError(
            f"{where}: config.json names no encoder (encoder_name is empty); a TreeHop network is only "
            "valid over the encoder it was trained with, so set encoder_name when building the config"
        )
    if canonical_encoder_name(config.encoder_name) != vectors.encoder.name:
        raise ConfigError(
            f"{where}: trained over encoder {config.encoder_name!r}, but the index was built with "
            f"{vectors.encoder.name!r}; use retriever.encoder={config.encoder_name} or a model trained "
            "over this encoder"
        )
    if bool(config.encoder_normalize) != bool(vectors.encoder.normalize):
        raise ConfigError(
            f"{where}: trained over {'normalized' if config.encoder_normalize else 'unnormalized'} "
            f"embeddings, but the index holds {'normalized' if vectors.encoder.normalize else 'unnormalized'} "
            "ones; set retriever.normalize to match"
        )


def _ivf_of(index: faiss.Index) -> Any:
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None
