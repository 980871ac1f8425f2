"""Settings of one retriever (dense or BM25), loadable from YAML with efficientrag.config.load_config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.hub import OFFLINE_DEFAULT_ENCODER
from efficientrag.retrieval.milvus.config import MilvusConfig
from efficientrag.setting_fields import SPEED_ONLY, SettingError, bounded, check_settings

# The search backends a config may name: the built-in ones, and each kind registered since
# (efficientrag.retrieval.factory.register_backend adds it; the factory holds how each is built).
SEARCH_KINDS: set[str] = {"dense", "bm25", "hybrid", "milvus"}


@dataclass
class RetrieverConfig:
    """One retriever's settings; the dense fields are ignored by BM25 and the ``bm25_*`` ones by dense.

    Defaults run offline on a CPU: all-MiniLM-L6-v2 (as it ships: mean pooling, normalized, so the
    inner product is the cosine) over an exact inner-product FAISS index. The paper's retriever is
    ``encoder=facebook/contriever-msmarco`` (a plain HF model: sentence-transformers wraps it with
    mean pooling and no normalization, which is what the paper's inner-product search expects).

    Attributes:
        kind: ``"dense"``, ``"bm25"``, ``"hybrid"`` (both, fused by reciprocal rank),
            ``"milvus"`` (a Milvus collection, settings in ``milvus``), or a kind registered with
            :func:`efficientrag.retrieval.factory.register_backend`.
        encoder: The sentence-transformers model (name or folder) that embeds queries and chunks.
        normalize: L2-normalize embeddings (None: as the model ships).
        query_prefix: Text put before every query before encoding (e5-style ``"query: "``).
        passage_prefix: Text put before every chunk before encoding.
        max_length: Tokens per text the encoder reads (None: the model's own limit).
        batch_size: Texts per encoder batch.
        device: ``"auto"`` (CUDA when available, else CPU) or a torch device string.
        backend: The sentence-transformers backend: ``"torch"``, ``"onnx"`` or ``"openvino"``.
        compute_dtype: ``"float32"`` (exact), ``"bfloat16"`` or ``"float16"`` (torch autocast).
        num_threads: CPU threads for torch and FAISS (None: the libraries' defaults).
        index_type: The FAISS index: ``"flat"`` (exact), ``"ivf"`` or ``"hnsw"``.
        ivf_nlist: IVF lists (None: about 4 * sqrt(corpus size)).
        ivf_nprobe: IVF lists searched per query.
        ivf_train_size: Rows sampled (seeded) to train the IVF centroids.
        hnsw_m: HNSW neighbours per node.
        hnsw_ef_construction: HNSW candidate list size while building.
        hnsw_ef_search: HNSW candidate list size while searching.
        shard_size: Rows per embedding shard on disk (the unit of resume of a killed indexing run).
        keep_embeddings: Keep the embedding shards after the index is written.
        bm25_k1: BM25 term-frequency saturation (Elasticsearch's default 1.2).
        bm25_b: BM25 length normalization, in [0, 1].
        bm25_method: The bm25s variant: robertson, lucene, atire, bm25l or bm25+.
        stopwords: A bm25s stopword list name (``"en"``), or None for none.
        bm25_stemmer: ``"auto"`` (English stemming when PyStemmer is installed), ``"none"``, or
            a PyStemmer language name.
        hybrid_rrf_k: The reciprocal-rank-fusion constant.
        hybrid_depth: Hits each backend contributes before fusion.
        hybrid_weights: ``[dense, bm25]`` fusion weights (None: equal).
        index_dir: Where the index is saved and loaded (None: built in memory).
        milvus: The Milvus settings (``kind: milvus``).
    """

    # "hybrid": the dense and the BM25 retriever below, fused by reciprocal rank (retrieval/hybrid.py).
    # "milvus": a Milvus collection (Lite file or server), settings under ``milvus`` below. Any kind
    # registered with efficientrag.retrieval.factory.register_backend is accepted too.
    kind: str = "dense"

    # --- dense: encoder ---------------------------------------------------------------------
    encoder: str = OFFLINE_DEFAULT_ENCODER
    # None: as the model ships (MiniLM normalizes, Contriever does not). True/False force it.
    normalize: bool | None = None
    # Prepended to the text before encoding (e5-style models want "query: " / "passage: ").
    query_prefix: str = ""
    passage_prefix: str = ""
    # Token limit per text; None keeps the model's own max_seq_length (256 for MiniLM).
    max_length: int | None = bounded(None, low=1)
    batch_size: int = bounded(32, low=1, roles=[SPEED_ONLY])
    # "auto": cuda if available, else cpu. Any torch device string otherwise.
    device: str = "auto"
    # sentence-transformers backend; "onnx"/"openvino" need their optional packages installed.
    backend: Literal["torch", "onnx", "openvino"] = "torch"
    # "bfloat16" runs the encoder under torch autocast: about 2x faster on CPUs with AMX/AVX512-BF16
    # and on GPUs, at a cosine of ~0.99997 to the float32 embeddings. float32 is exact and the default.
    compute_dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    # Threads for torch and faiss on CPU; None leaves the libraries' defaults (one per core).
    num_threads: int | None = bounded(None, low=1)

    # --- dense: index -----------------------------------------------------------------------
    index_type: Literal["flat", "ivf", "hnsw"] = "flat"
    # None: about 4*sqrt(corpus size) lists.
    ivf_nlist: int | None = bounded(None, low=1)
    ivf_nprobe: int = bounded(32, low=1)
    # Rows sampled (uniformly, seeded) to train the IVF centroids.
    ivf_train_size: int = bounded(200_000, low=1)
    hnsw_m: int = bounded(32, low=1)
    hnsw_ef_construction: int = bounded(200, low=1)
    hnsw_ef_search: int = bounded(128, low=1)
    # Rows per embedding shard on disk: the unit of resume after a killed indexing run.
    shard_size: int = bounded(10_000, low=1)
    # Keep embeddings/ after the index is written (lets another index type be built without
    # re-encoding); False deletes them once index.faiss is saved.
    keep_embeddings: bool = True

    # --- bm25 -------------------------------------------------------------------------------
    # Elasticsearch's defaults (DRAGIN and FLARE retrieve with Elasticsearch BM25).
    bm25_k1: float = bounded(1.2, low=0.0)
    bm25_b: float = bounded(0.75, low=0.0, high=1.0)
    bm25_method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = "lucene"
    # bm25s stopword list name ("en", "de", ...) or None for no stopword removal.
    stopwords: str | None = "en"
    # "auto": English Snowball stemming when PyStemmer is installed, none otherwise;
    # "none"; or a PyStemmer language name ("english", "german", ...).
    bm25_stemmer: str = "auto"

    # --- hybrid ------------------------------------------------------------------------------
    # RRF constant and each backend's list depth before fusion; weights: [dense, bm25].
    hybrid_rrf_k: int = bounded(60, low=0)
    hybrid_depth: int = bounded(50, low=1)
    hybrid_weights: list[float] | None = None

    # Where the index is saved/loaded; None builds in memory.
    index_dir: str | None = None

    # --- milvus (kind: milvus) ------------------------------------------------------------------
    # The encoder fields above apply to its dense search, bm25_k1/bm25_b/stopwords to its BM25.
    milvus: MilvusConfig = field(default_factory=MilvusConfig)

    def __post_init__(self) -> None:
        if self.kind not in SEARCH_KINDS:
            raise SettingError(
                f"kind must be a registered search backend ({', '.join(sorted(SEARCH_KINDS))}), got {self.kind!r}"
            )
        if self.hybrid_weights is not None and (
            len(self.hybrid_weights) != 2 or any(w < 0 for w in self.hybrid_weights)
        ):
            raise SettingError(
                f"hybrid_weights must be two non-negative numbers [dense, bm25], got {self.hybrid_weights}"
            )
        if not self.encoder:
            raise SettingError("encoder must name a sentence-transformers model or a local folder")
        check_settings(self)
