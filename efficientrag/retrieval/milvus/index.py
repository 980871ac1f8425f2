"""Creating, checking and filling a Milvus collection from a corpus, resumably.

Rows go in corpus order, one ``insert`` call per ``milvus.insert_batch_size`` chunks, so after a
kill -9 the collection holds the first n chunks (an acknowledged insert is in Milvus's write-ahead
log on a server, and Milvus Lite replays its own log on open). A rerun counts n, confirms the rows
around n are exactly the prefix it expects (anything else stops with an error instead of writing
duplicates: Milvus does not de-duplicate primary keys on insert), and encodes and inserts only
the rest; the vectors of the batch in flight are staged in a local file first, so not even that
batch is encoded twice. What the collection was filled from (corpus size and fingerprint, encoder, dimension,
analyzer, BM25 parameters) is stored in the collection's properties; a later run with other
inputs stops with a one-line error instead of mixing them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from efficientrag.atomic import atomic_open
from efficientrag.data.corpus import Corpus
from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.errors import CorpusMismatchError, IndexMismatchError, IndexNotFoundError
from efficientrag.retrieval.milvus.config import MilvusConfig
from efficientrag.run_lock import path_lock

PROP = "efficientrag."
FORMAT_VERSION = "1"
REBUILD_HINT = (
    "drop and refill it with `efficientrag index --rebuild`, or set retriever.milvus.collection to a new name"
)
ID_MAX_BYTES = 512
TITLE_MAX_BYTES = 2048


@dataclass
class CollectionInfo:
    """What ``describe_collection`` says, reduced to what the checks need."""

    fields: dict[str, dict[str, Any]]
    properties: dict[str, str]

    @property
    def ours(self) -> bool:
        return self.properties.get(PROP + "format") == FORMAT_VERSION

    def dim(self, field: str) -> int | None:
        params = self.fields.get(field, {}).get("params", {})
        return int(params["dim"]) if "dim" in params else None


def read_collection(client: Any, name: str) -> CollectionInfo:
    desc = client.describe_collection(name)
    fields = {f["name"]: f for f in desc.get("fields", [])}
    props = {str(k): str(v) for k, v in (desc.get("properties") or {}).items()}
    return CollectionInfo(fields, props)


def count_rows(client: Any, name: str) -> int:
    """Rows visible now (``count(*)`` at Strong consistency: inserts not yet flushed count too,
    unlike ``get_collection_stats`` on a server)."""
    res = client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")
    return int(res[0]["count(*)"])


def present_ids(client: Any, cfg: MilvusConfig, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` the collection holds."""
    found: set[str] = set()
    for start in range(0, len(ids), 1000):
        part = list(ids[start : start + 1000])
        rows = client.get(cfg.collection, ids=part, output_fields=[cfg.id_field])
        found.update(str(r[cfg.id_field]) for r in rows)
    return found


# --- what a collection depends on ----------------------------------------------------------------


def default_analyzer(stopwords: str | None) -> dict[str, Any]:
    """The standard tokenizer with lowercasing and the bm25 backend's stop-word list spelled out
    (a server's ``_english_`` shorthand is unknown to Milvus Lite, a literal list works on both)."""
    params: dict[str, Any] = {"tokenizer": "standard", "filter": ["lowercase"]}
    if stopwords:
        from bm25s.tokenization import _infer_stopwords

        params["filter"].append({"type": "stop", "stop_words": sorted(_infer_stopwords(stopwords))})
    return params


def analyzer_of(cfg: RetrieverConfig) -> dict[str, Any]:
    return cfg.milvus.analyzer_params or default_analyzer(cfg.stopwords)


def wanted_properties(cfg: RetrieverConfig, corpus: Corpus, encoder: Any | None) -> dict[str, str]:
    m = cfg.milvus
    props = {
        "format": FORMAT_VERSION,
        "store": m.stored,
        "corpus_size": str(len(corpus)),
        "corpus_fingerprint": corpus.fingerprint(),
        "text": "title: text",
    }
    if m.has_dense:
        from efficientrag.retrieval.dense import encode_vector

        described = encoder.describe()
        props.update({k: json.dumps(v) for k, v in described.items() if k != "pooling"})
        props.update(
            {"metric": m.metric, "index_type": m.index_type, "encoder_probe": encode_vector(encoder.probe())}
        )
    if m.has_bm25:
        props.update(
            {
                "analyzer": json.dumps(analyzer_of(cfg), sort_keys=True),
                "bm25_k1": str(float(cfg.bm25_k1)),
                "bm25_b": str(float(cfg.bm25_b)),
            }
        )
    return {PROP + k: v for k, v in props.items()}


def check_properties(location: str, info: CollectionInfo, wanted: dict[str, str]) -> None:
    """The first property that differs raises; the probe vector is compared by cosine, not text."""
    if not info.ours:
        raise IndexMismatchError(
            location,
            "owner",
            "(a collection not written by efficientrag)",
            "an efficientrag collection",
            hint="set retriever.milvus.collection to a new name (or search your own collection without indexing)",
        )
    for key, value in wanted.items():
        if key == PROP + "encoder_probe":
            continue
        if info.properties.get(key) != value:
            raise IndexMismatchError(
                location, key.removeprefix(PROP), info.properties.get(key), value, hint=REBUILD_HINT
            )


def check_corpus_of(
    location: str, info: CollectionInfo, cfg: MilvusConfig, corpus: Corpus, name: str
) -> None:
    """A collection opened together with a corpus must have been filled from that corpus.

    A collection of another corpus answers every search, with chunks the named corpus does not
    hold: evaluation then scores them against that corpus's gold ids and reports a normal table.
    ``efficientrag index`` records what filled the collection; a collection that does not say
    (filled elsewhere) cannot be vouched for either. ``cfg.foreign_collection`` says the
    collection is meant to differ, and skips the check.

    Args:
        location: The collection, as errors name it.
        info: What the collection records.
        cfg: The ``retriever.milvus`` settings.
        corpus: The corpus the command names.
        name: How errors name that corpus (its file).

    Raises:
        CorpusMismatchError: Another corpus, or an unknown one, filled the collection.
    """
    if cfg.foreign_collection:
        return
    props = info.properties
    saved = (props.get(PROP + "corpus_size"), props.get(PROP + "corpus_fingerprint"))
    wanted = (str(len(corpus)), corpus.fingerprint())
    if info.ours and saved == wanted:
        return
    known = info.ours and None not in saved
    raise CorpusMismatchError(
        location,
        _filled_from(*saved) if known else None,
        name,
        _filled_from(*wanted),
        hint=(
            f"index {name} into a collection of its own (`efficientrag index` with "
            "retriever.milvus.collection=NAME), or set retriever.milvus.foreign_collection=true if "
            "this collection is meant to hold other chunks"
        ),
    )


def _filled_from(size: str | None, fingerprint: str | None) -> str:
    return f"{size} chunks, fingerprint {str(fingerprint)[:12]}"


def check_dense_dim(location: str, info: CollectionInfo, cfg: MilvusConfig, dim: int) -> None:
    saved = info.dim(cfg.dense_field)
    if saved is None:
        raise IndexMismatchError(
            location,
            "dense field",
            f"no vector field {cfg.dense_field!r}",
            cfg.dense_field,
            hint="set retriever.milvus.dense_field, or milvus.search=bm25 for a text-only collection",
        )
    if saved != dim:
        raise IndexMismatchError(
            location,
            "dim",
            saved,
            dim,
            hint="set retriever.encoder to the model the collection was filled with, or " + REBUILD_HINT,
        )


def check_text_lengths(corpus: Corpus, cfg: MilvusConfig, where: str) -> None:
    """Every chunk must fit the VARCHAR fields before the first row is written: Milvus refuses the
    whole insert batch otherwise, hours into a long run."""
    limits = (
        (cfg.text_field, cfg.max_text_bytes),
        (cfg.title_field, TITLE_MAX_BYTES),
        (cfg.id_field, ID_MAX_BYTES),
    )
    for field, limit in limits:
        too_long = [
            (c.id, n) for c in corpus if (n := len(_field_value(c, field, cfg).encode("utf-8"))) > limit
        ]
        if too_long:
            cid, n = too_long[0]
            raise InvalidArgumentError(
                f"{where}: chunk {cid!r} has a {field} of {n} bytes, over Milvus's VARCHAR limit of {limit} "
                f"({len(too_long)} chunk(s) in all); split long chunks into passages before indexing"
            )


def _field_value(chunk: Any, field: str, cfg: MilvusConfig) -> str:
    if field == cfg.text_field:
        return chunk.contents
    return chunk.title if field == cfg.title_field else chunk.id


# --- creating and filling ------------------------------------------------------------------------


def create_collection(client: Any, cfg: RetrieverConfig, dim: int | None, properties: dict[str, str]) -> None:
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    m = cfg.milvus
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field(m.id_field, DataType.VARCHAR, is_primary=True, max_length=ID_MAX_BYTES)
    schema.add_field(m.title_field, DataType.VARCHAR, max_length=TITLE_MAX_BYTES)
    text_kw: dict[str, Any] = {"max_length": m.max_text_bytes}
    if m.has_bm25:
        text_kw.update(enable_analyzer=True, analyzer_params=analyzer_of(cfg))
    schema.add_field(m.text_field, DataType.VARCHAR, **text_kw)
    index_params = client.prepare_index_params()
    if m.has_dense:
        schema.add_field(m.dense_field, DataType.FLOAT_VECTOR, dim=dim)
        index_params.add_index(
            m.dense_field, index_type=m.index_type, metric_type=m.metric, params=dense_build_params(m)
        )
    if m.has_bm25:
        schema.add_field(m.sparse_field, DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name=f"{m.sparse_field}_bm25",
                function_type=FunctionType.BM25,
                input_field_names=[m.text_field],
                output_field_names=[m.sparse_field],
            )
        )
        index_params.add_index(
            m.sparse_field,
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": float(cfg.bm25_k1), "bm25_b": float(cfg.bm25_b)},
        )
    client.create_collection(
        m.collection,
        schema=schema,
        index_params=index_params,
        properties=properties,
        consistency_level="Strong",
    )


def dense_build_params(cfg: MilvusConfig) -> dict[str, Any]:
    if cfg.index_type == "HNSW":
        return {"M": cfg.hnsw_m, "efConstruction": cfg.hnsw_ef_construction}
    if cfg.index_type == "IVF_FLAT":
        return {"nlist": cfg.ivf_nlist}
    return {}


def resume_position(client: Any, cfg: MilvusConfig, corpus: Corpus, location: str) -> tuple[int, set[str]]:
    """``(first corpus position to insert from, ids already present from there on)``.

    The collection should hold a prefix of the corpus; the window of one batch either side of the
    count is read back to confirm it (and to find the rows of a batch that landed in part).
    """
    n = count_rows(client, cfg.collection)
    if n > len(corpus):
        raise IndexMismatchError(
            location,
            "row count",
            n,
            len(corpus),
            hint="rows were inserted more than once (Milvus keeps duplicate primary keys); " + REBUILD_HINT,
        )
    if n == 0:
        return 0, set()
    lo, hi = max(0, n - cfg.insert_batch_size), min(len(corpus), n + cfg.insert_batch_size)
    window = corpus.ids[lo:hi]
    present = present_ids(client, cfg, window)
    if lo + len(present) != n:
        raise IndexMismatchError(
            location,
            "rows",
            f"{n} rows that are not the first {n} chunks of the corpus",
            "the corpus in order",
            hint=REBUILD_HINT,
        )
    return lo, present


def fill(
    client: Any,
    cfg: RetrieverConfig,
    corpus: Corpus,
    encode: Callable[[list[str], Any], np.ndarray] | None,
    location: str,
    *,
    staging: Path | None = None,
    show_progress: bool = True,
) -> int:
    """Insert every chunk not yet in the collection; returns the number of rows inserted now.

    ``staging``: a local file holding the vectors of the batch in flight, so that a batch encoded
    but not inserted when the run was killed is inserted from there instead of encoded again.
    """
    m = cfg.milvus
    start, present = resume_position(client, m, corpus, location)
    inserted = 0
    with tqdm(
        total=len(corpus),
        initial=start + len(present),
        desc=f"Filling Milvus {m.collection!r}",
        unit="chunk",
        disable=not show_progress,
    ) as bar:
        for lo in range(start, len(corpus), m.insert_batch_size):
            chunks = [c for c in corpus.chunks[lo : lo + m.insert_batch_size] if c.id not in present]
            if not chunks:
                continue
            rows = [{m.id_field: c.id, m.title_field: c.title, m.text_field: c.contents} for c in chunks]
            if encode is not None:
                batch_ids = [c.id for c in chunks]
                vectors = read_staged(staging, batch_ids)
                if vectors is None:
                    vectors = encode([c.contents for c in chunks], bar)
                    write_staged(staging, batch_ids, vectors)
                else:
                    bar.update(len(chunks))
                for row, vec in zip(rows, vectors, strict=True):
                    row[m.dense_field] = vec.tolist()
            else:
                bar.update(len(rows))
            client.insert(m.collection, rows)
            inserted += len(rows)
    client.flush(m.collection)
    if staging is not None:
        staging.unlink(missing_ok=True)
    total = count_rows(client, m.collection)
    if total != len(corpus):
        raise IndexNotFoundError(location, f"holds {total} rows after filling, expected {len(corpus)}")
    return inserted


def read_staged(staging: Path | None, ids: list[str]) -> np.ndarray | None:
    """The staged vectors if they are this batch's (same ids, same order), else None."""
    if staging is None or not staging.is_file():
        return None
    try:
        with np.load(staging, allow_pickle=False) as saved:
            if saved["ids"].tolist() == ids:
                return np.asarray(saved["vectors"], dtype=np.float32)
    except (OSError, ValueError, KeyError):
        pass  # a torn or foreign file: encode again
    return None


def write_staged(staging: Path | None, ids: list[str], vectors: np.ndarray) -> None:
    if staging is None:
        return
    with atomic_open(staging, "wb") as fh:  # a handle: np.savez would add ".npz" to a temp name
        np.savez(fh, ids=np.array(ids, dtype=str), vectors=np.asarray(vectors, dtype=np.float32))


def staging_lock(staging: Path | None, *, wait: bool = True) -> contextlib.AbstractContextManager[Any]:
    """Hold the lock of a collection's staging file while filling it: two fillers at once would
    both insert the rows missing when they started, and Milvus keeps duplicate primary keys.

    Args:
        staging: the collection's staging file (see ``fill``); None (a server with no local folder)
            locks nothing.
        wait: wait for another filler to finish (it then finds its rows in place), or refuse
            (:class:`~efficientrag.run_lock.FolderLockedError`) naming it.
    """
    if staging is None:
        return contextlib.nullcontext()
    lock = staging.with_name(f".{staging.name}.lock")
    return path_lock(
        lock, wait=wait, what=f"Milvus staging {staging}", hint="wait for it to finish, then rerun"
    )
