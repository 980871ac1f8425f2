"""The ``retriever.milvus`` section: where the collection lives, what it holds and how it is searched.

The same settings serve Milvus Lite (``uri`` a local ``.db`` path, served in-process by the
``milvus-lite`` package) and a Milvus Standalone / Distributed server (``uri: http://host:19530``).
See docs/backends.md for what differs between the two engines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from efficientrag.config_values import CHECK_ONLY
from efficientrag.setting_fields import SettingError, bounded, check_settings

# Milvus's own VARCHAR limit (bytes on a server; milvus-lite counts characters, a looser bound).
VARCHAR_MAX = 65_535
# Milvus caps the queries of one search call and its top-k at 16,384 each.
MILVUS_MAX_NQ = 16_384


@dataclass
class MilvusConfig:
    """Where a Milvus collection lives, what it holds and how it is searched (``retriever.milvus``).

    Attributes:
        uri: A ``.db`` path (Milvus Lite) or ``http(s)://host:port`` (a server or cluster); None:
            ``<index_dir>/milvus.db``.
        token: Server credentials (``"user:password"`` or an API key); None reads ``MILVUS_TOKEN``.
            Never saved.
        db_name: The server database ("": the default one).
        collection: The collection's name.
        foreign_collection: The collection may hold other chunks than the corpus the command names
            (your own collection, filled elsewhere, or a larger one): search it without checking
            that it was filled from that corpus. False: opening it with a corpus that did not fill
            it is refused.
        search: ``"dense"`` (the package's encoder), ``"bm25"`` (Milvus's BM25 function) or
            ``"hybrid"`` (both, fused by Milvus's reciprocal-rank ranker).
        store: What indexing writes: ``"dense"``, ``"bm25"`` or ``"both"`` (None: what ``search`` needs).
        index_type: The dense index: ``"FLAT"`` (exact), ``"HNSW"``, ``"IVF_FLAT"`` or ``"AUTOINDEX"``.
        metric: The dense metric: ``"IP"``, ``"COSINE"`` or ``"L2"``.
        hnsw_m: HNSW neighbours per node.
        hnsw_ef_construction: HNSW candidate list size while building.
        hnsw_ef: HNSW candidate list size while searching.
        ivf_nlist: IVF lists.
        ivf_nprobe: IVF lists searched per query.
        analyzer_params: Milvus ``analyzer_params`` for BM25 (None: standard tokenizer, lowercase,
            English stop words).
        rrf_k: The hybrid search's reciprocal-rank-fusion constant.
        hybrid_depth: Hits each route contributes before fusion.
        insert_batch_size: Rows per insert call (the unit of resume of a killed indexing run).
        search_batch_size: Queries per search call (1..16,384).
        max_text_bytes: Bytes of ``"{title}: {text}"`` the text field accepts; a longer chunk stops
            indexing before any row is written.
        timeout_s: Seconds to wait for a server before failing.
        id_field: The collection's chunk id field.
        title_field: Its title field.
        text_field: Its text field (holding ``"{title}: {text}"``).
        dense_field: Its dense vector field.
        sparse_field: Its BM25 sparse vector field.
    """

    # None: ``<index_dir>/milvus.db`` (Milvus Lite). A path ending in ``.db`` is Milvus Lite;
    # ``http://host:19530`` / ``https://...`` is a Milvus server or cluster.
    uri: str | None = None
    # Server credentials ("user:password" or an API key); None reads MILVUS_TOKEN. Never saved.
    token: str | None = field(default=None, metadata={"secret": True})
    db_name: str = ""
    collection: str = "efficientrag"
    # A collection opened together with a corpus (eval; retrieve/serve with --corpus) must have been
    # filled from that corpus by `efficientrag index`, else its hits are chunks the corpus does not
    # hold and scores silently drop. True: the collection is meant to differ (your own, filled
    # elsewhere); it is searched as it is.
    foreign_collection: bool = field(default=False, metadata={CHECK_ONLY: True})
    # What a search runs: the package's encoder over the dense field, Milvus's BM25 function over
    # the analyzed text field, or both fused by Milvus's reciprocal-rank ranker.
    search: Literal["dense", "bm25", "hybrid"] = "dense"
    # What `efficientrag index` writes; None: what ``search`` needs (hybrid: both). A BM25-only
    # collection is filled without running the encoder at all.
    store: Literal["dense", "bm25", "both"] | None = None
    # Dense index and metric. FLAT + IP is exact and equals FAISS Flat; HNSW / IVF_FLAT for large
    # collections; AUTOINDEX lets a server (or Zilliz Cloud) choose.
    index_type: Literal["FLAT", "HNSW", "IVF_FLAT", "AUTOINDEX"] = "FLAT"
    metric: Literal["IP", "COSINE", "L2"] = "IP"
    hnsw_m: int = bounded(32, low=1)
    hnsw_ef_construction: int = bounded(200, low=1)
    hnsw_ef: int = bounded(128, low=1)
    ivf_nlist: int = bounded(1024, low=1)
    ivf_nprobe: int = bounded(32, low=1)
    # BM25 analyzer (Milvus ``analyzer_params``); None: the standard tokenizer, lowercase and the
    # English stop words of the bm25 backend (``retriever.stopwords``), which both engines accept.
    analyzer_params: dict[str, Any] | None = None
    # Hybrid: RRFRanker's k and each route's depth before fusion (as retriever.hybrid_* for bm25s+FAISS).
    rrf_k: int = bounded(60, low=0)
    hybrid_depth: int = bounded(50, low=1)
    # Rows per insert call: the unit of resume after a killed `efficientrag index`.
    insert_batch_size: int = bounded(256, low=1)
    # Queries per search call (Milvus caps one call at 16,384).
    search_batch_size: int = bounded(1024, low=1, high=MILVUS_MAX_NQ)
    # Bytes of ``"{title}: {text}"`` the text field accepts; longer chunks stop indexing before any
    # row is written (docs/backends.md, "Long chunks").
    max_text_bytes: int = bounded(VARCHAR_MAX, low=1, high=VARCHAR_MAX)
    # Seconds to wait for a server before failing with the uri in the error.
    timeout_s: float = bounded(10.0, above=0.0)
    # Field names, for a collection of your own (defaults: what `efficientrag index` creates). The
    # text field holds ``"{title}: {text}"``; a stored text without that prefix is taken as is.
    id_field: str = "id"
    title_field: str = "title"
    text_field: str = "contents"
    dense_field: str = "dense"
    sparse_field: str = "sparse"

    def __post_init__(self) -> None:
        check_settings(self)
        needs = self.required_store()
        if self.store is not None and self.store != "both" and self.store != needs:
            wanted = repr(needs) if needs == "both" else f"{needs!r} or 'both'"
            raise SettingError(f"search={self.search!r} needs store={wanted}, got {self.store!r}")
        if not self.collection:
            raise SettingError("collection must name a collection")

    def required_store(self) -> str:
        """What the collection must hold for ``search`` to run.

        Returns:
            ``"dense"``, ``"bm25"`` or ``"both"`` (hybrid).
        """
        return {"dense": "dense", "bm25": "bm25", "hybrid": "both"}[self.search]

    @property
    def stored(self) -> str:
        """What the collection holds (or will hold)."""
        return self.store or self.required_store()

    @property
    def has_dense(self) -> bool:
        """Whether the collection holds dense vectors."""
        return self.stored in ("dense", "both")

    @property
    def has_bm25(self) -> bool:
        """Whether the collection holds the BM25 field."""
        return self.stored in ("bm25", "both")
