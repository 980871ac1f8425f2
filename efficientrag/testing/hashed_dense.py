"""A dense retriever with no model to load, for fast tests of code that runs on embeddings.

Each text gets a unit vector drawn from a generator seeded by the text's sha256, so equal texts get
equal vectors and nothing depends on a model; the vectors sit in a real FAISS inner-product index,
and the object has the attributes TreeHop reads from a
:class:`~efficientrag.retrieval.dense.DenseRetriever` (``index``, ``encoder``, ``corpus``).
Retrieval quality is meaningless (random vectors); shapes, ids, caching and control flow are real.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import faiss
import numpy as np

from efficientrag.data.corpus import Corpus
from efficientrag.retrieval.base import Hit


class HashedEncoder:
    def __init__(self, dim: int = 32, name: str = "hashed-test-encoder", normalize: bool = True) -> None:
        self.dim = dim
        self.name = name
        self.normalize = normalize

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
        v = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
        return v / np.linalg.norm(v) if self.normalize else v

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.empty((0, self.dim), np.float32)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_queries(texts)


class HashedDenseRetriever:
    kind = "dense"

    def __init__(self, corpus: Corpus, dim: int = 32, **encoder_kw) -> None:
        self.corpus = corpus
        self.encoder = HashedEncoder(dim, **encoder_kw)
        self.index = faiss.IndexFlatIP(dim)
        self.index.add(self.encoder.encode_passages([c.contents for c in corpus]))

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        scores, rows = self.index.search(self.encoder.encode_queries(list(queries)), min(k, len(self.corpus)))
        return [
            [Hit(self.corpus[int(r)], float(s)) for s, r in zip(srow, rrow, strict=True) if r >= 0]
            for srow, rrow in zip(scores, rows, strict=True)
        ]
