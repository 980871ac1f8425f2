"""Settings of one retriever (dense or BM25), loadable from YAML with efficientrag.config.load_config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.hub import OFFLINE_DEFAULT_ENCODER
from efficientrag.retrieval.milvus.config import MilvusConfig

BM25_METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")
# Fields that count something: >= 1 when set.
COUNT_FIELDS = (
    "batch_size",
    "shard_size",
    "ivf_nlist",
    "ivf_nprobe",
    "ivf_train_size",
    "hnsw_m",
    "hnsw_ef_construction",
    "hnsw_ef_search",
    "max_length",
    "num_threads",
)


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
    max_length: int | None = None
    batch_size: int = 32
    # "auto": cuda if available, else cpu. Any torch device string otherwise.
    device: str = "auto"
    # sentence-transformers backend; "onnx"/"openvino" need their optional packages installed.
    backend: Literal["torch", "onnx", "openvino"] = "torch"
    # "bfloat16" runs the encoder under torch autocast: about 2x faster on CPUs with AMX/AVX512-BF16
    # and on GPUs, at a cosine of ~0.99997 to the float32 embeddings. float32 is exact and the default.
    compute_dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    # Threads for torch and faiss on CPU; None leaves the libraries' defaults (one per core).
    num_threads: int | None = None

    # --- dense: index -----------------------------------------------------------------------
    index_type: Literal["flat", "ivf", "hnsw"] = "flat"
    # None: about 4*sqrt(corpus size) lists.
    ivf_nlist: int | None = None
    ivf_nprobe: int = 32
    # Rows sampled (uniformly, seeded) to train the IVF centroids.
    ivf_train_size: int = 200_000
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    # Rows per embedding shard on disk: the unit of resume after a killed indexing run.
    shard_size: int = 10_000
    # Keep embeddings/ after the index is written (lets another index type be built without
    # re-encoding); False deletes them once index.faiss is saved.
    keep_embeddings: bool = True

    # --- bm25 -------------------------------------------------------------------------------
    # Elasticsearch's defaults (DRAGIN and FLARE retrieve with Elasticsearch BM25).
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = "lucene"
    # bm25s stopword list name ("en", "de", ...) or None for no stopword removal.
    stopwords: str | None = "en"
    # "auto": English Snowball stemming when PyStemmer is installed, none otherwise;
    # "none"; or a PyStemmer language name ("english", "german", ...).
    bm25_stemmer: str = "auto"

    # --- hybrid ------------------------------------------------------------------------------
    # RRF constant and each backend's list depth before fusion; weights: [dense, bm25].
    hybrid_rrf_k: int = 60
    hybrid_depth: int = 50
    hybrid_weights: list[float] | None = None

    # Where the index is saved/loaded; None builds in memory.
    index_dir: str | None = None

    # --- milvus (kind: milvus) ------------------------------------------------------------------
    # The encoder fields above apply to its dense search, bm25_k1/bm25_b/stopwords to its BM25.
    milvus: MilvusConfig = field(default_factory=MilvusConfig)

    def __post_init__(self) -> None:
        if self.kind not in SEARCH_KINDS:
            raise ValueError(
                f"kind must be a registered search backend ({', '.join(sorted(SEARCH_KINDS))}), got {self.kind!r}"
            )
        if self.hybrid_rrf_k < 0 or self.hybrid_depth < 1:
            raise ValueError(
                f"need hybrid_rrf_k >= 0 and hybrid_depth >= 1, got {self.hybrid_rrf_k}, {self.hybrid_depth}"
            )
        if self.hybrid_weights is not None and (
            len(self.hybrid_weights) != 2 or any(w < 0 for w in self.hybrid_weights)
        ):
            raise ValueError(
                f"hybrid_weights must be two non-negative numbers [dense, bm25], got {self.hybrid_weights}"
            )
        if self.index_type not in ("flat", "ivf", "hnsw"):
            raise ValueError(f"index_type must be 'flat', 'ivf' or 'hnsw', got {self.index_type!r}")
        if self.bm25_method not in BM25_METHODS:
            raise ValueError(f"bm25_method must be one of {list(BM25_METHODS)}, got {self.bm25_method!r}")
        for name in COUNT_FIELDS:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if not self.encoder:
            raise ValueError("encoder must name a sentence-transformers model or a local folder")
        if self.bm25_k1 < 0 or not 0 <= self.bm25_b <= 1:
            raise ValueError(f"need bm25_k1 >= 0 and 0 <= bm25_b <= 1, got {self.bm25_k1}, {self.bm25_b}")
