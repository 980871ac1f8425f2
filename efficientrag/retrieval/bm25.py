"""BM25 in-process with ``bm25s`` (no Elasticsearch), over ``chunk.contents`` like the dense index.

Hits are the chunks that share at least one (non-stopword, stemmed) term with the query, i.e.
score > 0, best first, ties broken by corpus order so results are reproducible; a query with no
indexed term (empty, only stopwords, unseen words) gets ``[]`` rather than k arbitrary chunks.

Index folder: ``meta.json`` + ``ids.json`` (as for dense) and ``bm25/``, bm25s's own save format:
JSON vocabulary and parameters and ``.npy`` score arrays, which load with ``allow_pickle=False``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from efficientrag.data.corpus import Corpus
from efficientrag.errors import InvalidArgumentError, OperationError
from efficientrag.retrieval.base import Hit
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.errors import IndexNotFoundError
from efficientrag.retrieval.meta import META_FILE, check_corpus, check_field, load_meta, new_meta, save_meta
from efficientrag.retrieval.queries import check_search_args

BM25_DIR = "bm25"


def resolve_stemmer(name: str) -> tuple[str | None, Any]:
    """``(language or None, PyStemmer stemmer or None)`` for the ``bm25_stemmer`` setting (bm25s
    calls its ``stemWords`` on the vocabulary)."""
    if name == "none":
        return None, None
    try:
        import Stemmer
    except ImportError:
        if name == "auto":
            return None, None
        raise OperationError(f"bm25_stemmer={name!r} needs PyStemmer: pip install PyStemmer") from None
    language = "english" if name == "auto" else name
    try:
        return language, Stemmer.Stemmer(language)
    except KeyError:
        raise InvalidArgumentError(f"PyStemmer has no stemmer for {language!r}") from None


class BM25Retriever:
    """Batched BM25 top-k search over ``corpus`` (see the module docstring).

    Most code gets one from :meth:`build` or :meth:`load` (or ``build_retriever``).

    Args:
        corpus: The chunks, in index row order.
        model: The fitted bm25s index.
        settings: The settings it was built with (:meth:`settings_from`).
        meta: The index's description, as saved in ``meta.json``.
    """

    kind = "bm25"

    def __init__(
        self, corpus: Corpus, model: bm25s.BM25, settings: dict[str, Any], meta: dict[str, Any]
    ) -> None:
        self.corpus = corpus
        self.model = model
        self.last_timings: dict[str, float] = {}
        self.settings = settings
        self.meta = meta
        _, self._stem = resolve_stemmer(settings["stemmer"] or "none")

    @staticmethod
    def settings_from(cfg: RetrieverConfig) -> dict[str, Any]:
        """The settings an index depends on, with the stemmer resolved to what is installed.

        Args:
            cfg: The retriever config.

        Returns:
            ``k1``, ``b``, ``method``, ``stopwords``, ``stemmer`` (a language or None), ``lowercase``.

        Raises:
            RuntimeError: A stemmer language was named and PyStemmer is not installed.
        """
        language, _ = resolve_stemmer(cfg.bm25_stemmer)
        return {
            "k1": float(cfg.bm25_k1),
            "b": float(cfg.bm25_b),
            "method": cfg.bm25_method,
            "stopwords": cfg.stopwords,
            "stemmer": language,
            "lowercase": True,
        }

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        cfg: RetrieverConfig | None = None,
        index_dir: str | Path | None = None,
        *,
        show_progress: bool = True,
    ) -> BM25Retriever:
        """Tokenize and index ``corpus`` (lower-cased, stopwords removed, stemmed as configured).

        Args:
            corpus: The chunks to index.
            cfg: The BM25 settings (None: the defaults).
            index_dir: Where to save the index (None: in memory only).
            show_progress: Show progress bars.

        Returns:
            The retriever, saved to ``index_dir`` when given.

        Raises:
            ValueError: The corpus is empty.
        """
        cfg = cfg or RetrieverConfig(kind="bm25")
        if len(corpus) == 0:
            raise InvalidArgumentError("cannot index an empty corpus")
        settings = cls.settings_from(cfg)
        _, stem = resolve_stemmer(settings["stemmer"] or "none")
        tokens = bm25s.tokenize(
            [c.contents for c in corpus],
            lower=True,
            stopwords=settings["stopwords"],
            stemmer=stem,
            return_ids=True,
            show_progress=show_progress,
        )
        model = bm25s.BM25(k1=settings["k1"], b=settings["b"], method=settings["method"], backend="numpy")
        model.index(tokens, show_progress=show_progress)
        meta = new_meta(cls.kind, corpus)
        meta.update(settings)
        meta["bm25s_version"] = bm25s.__version__
        retriever = cls(corpus, model, settings, meta)
        if index_dir is not None:
            retriever.save(index_dir)
        return retriever

    @classmethod
    def load(cls, index_dir: str | Path, corpus: Corpus, cfg: RetrieverConfig | None = None) -> BM25Retriever:
        """Open a saved index; a different corpus or BM25 setting raises IndexMismatchError.

        Args:
            index_dir: The index folder.
            corpus: The corpus it was built from.
            cfg: The settings it is expected to have (None: the defaults).

        Returns:
            The retriever.

        Raises:
            IndexMismatchError: The corpus or a setting differs.
            IndexNotFoundError: There is no complete index.
        """
        cfg = cfg or RetrieverConfig(kind="bm25")
        index_dir = Path(index_dir)
        meta = load_meta(index_dir, cls.kind)
        check_corpus(index_dir, meta, corpus)
        settings = cls.settings_from(cfg)
        for field, value in settings.items():
            check_field(index_dir / META_FILE, meta, field, value)
        if not (index_dir / BM25_DIR).is_dir():
            raise IndexNotFoundError(index_dir, f"{BM25_DIR}/ is missing")
        model = bm25s.BM25.load(index_dir / BM25_DIR, mmap=False, allow_pickle=False, show_progress=False)
        if model.scores["num_docs"] != len(corpus):
            raise IndexNotFoundError(index_dir, f"{BM25_DIR}/ holds {model.scores['num_docs']} documents")
        return cls(corpus, model, settings, meta)

    def save(self, index_dir: str | Path) -> None:
        """Write ``bm25/``, ``ids.json`` and, last, ``meta.json``.

        Args:
            index_dir: The folder (created if needed; its ``bm25/`` is replaced).
        """
        index_dir = Path(index_dir)
        index_dir.mkdir(parents=True, exist_ok=True)
        (index_dir / META_FILE).unlink(missing_ok=True)
        if (index_dir / BM25_DIR).exists():
            shutil.rmtree(index_dir / BM25_DIR)
        self.model.save(index_dir / BM25_DIR, allow_pickle=False, show_progress=False)
        save_meta(index_dir, self.meta, self.corpus.ids)

    # ------------------------------------------------------------------------------------------

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top-``k`` chunks per query by BM25 score; only chunks sharing a term with the query.

        Args:
            queries: The queries.
            k: Hits per query at most.

        Returns:
            One list of hits per query, best first (ties in corpus order); ``[]`` for a query
            with no indexed term.
        """
        queries, k = check_search_args(queries, k)
        results: list[list[Hit]] = [[] for _ in queries]
        if k == 0 or not queries:
            self.last_timings = {"encode": 0.0, "search": 0.0}
            return results
        t0 = time.perf_counter()
        tokenized = bm25s.tokenize(
            queries,
            lower=True,
            stopwords=self.settings["stopwords"],
            stemmer=self._stem,
            return_ids=False,
            show_progress=False,
        )
        t1 = time.perf_counter()
        chunks = self.corpus.chunks
        for i, terms in enumerate(tokenized):
            term_ids = self.model.get_tokens_ids(terms)
            if not term_ids:
                continue
            scores = self.model.get_scores_from_ids(term_ids)
            results[i] = [Hit(chunks[r], float(scores[r])) for r in top_k_rows(scores, k)]
        self.last_timings = {"encode": t1 - t0, "search": time.perf_counter() - t1}
        return results


def top_k_rows(scores: np.ndarray, k: int) -> list[int]:
    """Rows of the ``k`` highest positive scores, by descending score then ascending row, in
    O(n) plus O(k log k): ties at the cut are taken in row order, not argpartition's."""
    k = min(k, len(scores))
    if k == 0:
        return []
    threshold = scores[np.argpartition(-scores, k - 1)[k - 1]]
    above = np.flatnonzero(scores > threshold)
    ties = np.flatnonzero(scores == threshold)[: k - len(above)]
    rows = np.concatenate([above, ties])
    rows = rows[np.lexsort((rows, -scores[rows]))]
    return [int(r) for r in rows if scores[r] > 0]
