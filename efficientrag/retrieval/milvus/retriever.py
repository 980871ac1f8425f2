"""Search over a Milvus collection: dense (the package's encoder), BM25 (Milvus's built-in function
over the analyzed text field) or both fused by Milvus's reciprocal-rank ranker.

The retriever holds no corpus: a hit's chunk is rebuilt from the fields the search returns. All
queries of a call go to Milvus in one search request (split at ``milvus.search_batch_size``).
Scores are made larger-is-better whatever the engine reports: Milvus Lite returns BM25 matches
with a negative "distance" (smallest first), a Milvus server returns the positive BM25 score, so a
BM25 score is the distance's absolute value; L2 distances are negated. As with the bm25 backend,
a BM25 hit needs a shared term (score > 0), and an empty query gets no hits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.base import Hit
from efficientrag.retrieval.chunk_text import chunk_from_stored
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.errors import IndexMismatchError, IndexNotFoundError
from efficientrag.retrieval.milvus.client import connect, describe_uri, is_server_uri, resolve_uri
from efficientrag.retrieval.milvus.index import (
    PROP,
    CollectionInfo,
    check_corpus_of,
    check_dense_dim,
    check_properties,
    check_text_lengths,
    count_rows,
    create_collection,
    fill,
    read_collection,
    staging_lock,
    wanted_properties,
)
from efficientrag.retrieval.queries import check_search_args

log = logging.getLogger(__name__)


class MilvusRetriever:
    """Batched top-k search over one Milvus collection (see the module docstring).

    Get one from :meth:`build` or :meth:`open` (or ``build_retriever``), which check the collection.

    Args:
        client: A connected ``pymilvus.MilvusClient``.
        cfg: The retriever config (``cfg.milvus`` names the collection and the search).
        location: The uri and collection as errors and logs name them (no credentials).
        encoder: The query encoder for dense and hybrid search (None for BM25 only).
        meta: What the collection was filled from, as runs record it.
    """

    kind = "milvus"

    def __init__(
        self, client: Any, cfg: RetrieverConfig, location: str, encoder: Any | None, meta: dict[str, Any]
    ) -> None:
        self.client = client
        self.cfg = cfg
        self.m = cfg.milvus
        self.location = location
        self.encoder = encoder
        self.meta = meta
        self.last_timings: dict[str, float] = {}
        self._fields = [self.m.id_field, self.m.title_field, self.m.text_field]

    # --- opening -------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        cfg: RetrieverConfig,
        corpus: Corpus,
        index_dir: str | Path | None = None,
        *,
        rebuild: bool = False,
        encoder: Any | None = None,
        show_progress: bool = True,
    ) -> MilvusRetriever:
        """Create (or resume filling, or verify) the collection for ``corpus``, then open it.

        Args:
            cfg: The retriever config (``cfg.milvus`` for the collection).
            corpus: The chunks to store.
            index_dir: Where Milvus Lite's file goes when ``milvus.uri`` is None (and a server's
                staging file).
            rebuild: Drop an existing collection and fill it anew.
            encoder: An already loaded encoder (dense or hybrid).
            show_progress: Show progress bars.

        Returns:
            The retriever over the filled collection.

        Raises:
            ValueError: The corpus is empty.
            IndexMismatchError: An existing collection was filled with other settings.
            BackendUnavailableError: pymilvus is missing or the server does not answer.
        """
        m = cfg.milvus
        uri = resolve_uri(m, index_dir)
        location = describe_uri(uri, m)
        if len(corpus) == 0:
            raise InvalidArgumentError("cannot index an empty corpus")
        check_text_lengths(corpus, m, location)
        client = connect(m, uri, create=True)
        if rebuild and client.has_collection(m.collection):
            client.drop_collection(m.collection)
        exists = client.has_collection(m.collection)
        info = read_collection(client, m.collection) if exists else None
        if info is not None and info.properties.get(PROP + "store") == "both" and m.stored != "both":
            # A collection holding both covers a dense- or BM25-only search: keep filling it as such.
            cfg = replace(cfg, milvus=replace(m, store="both"))
            m = cfg.milvus
        if m.has_dense and encoder is None:
            encoder = _load_encoder(cfg, show_progress)
        wanted = wanted_properties(cfg, corpus, encoder)
        if info is not None:
            check_properties(location, info, wanted)
            # A collection from an earlier process starts released: not even count(*) answers.
            client.load_collection(m.collection)
            if m.has_dense:
                check_dense_dim(location, info, m, encoder.dim)
                _check_probe(location, info, encoder)
        else:
            create_collection(client, cfg, encoder.dim if m.has_dense else None, wanted)
        if m.has_dense:
            from efficientrag.retrieval.encoder import warn_over_limit

            warn_over_limit(corpus, encoder)  # as the FAISS build: cut chunks are said, not hidden
        encode = (lambda texts, bar: encoder.encode_passages(texts, progress=bar)) if m.has_dense else None
        staging = staging_file(uri, m.collection, index_dir)
        with staging_lock(staging):  # a second filler waits, then finds the rows in place
            added = fill(client, cfg, corpus, encode, location, staging=staging, show_progress=show_progress)
        log.info("%s: %d rows inserted now, %d in all", location, added, len(corpus))
        return cls._opened(client, cfg, uri, location, encoder, read_collection(client, m.collection))

    @classmethod
    def open(
        cls,
        cfg: RetrieverConfig,
        index_dir: str | Path | None = None,
        *,
        encoder: Any | None = None,
        show_progress: bool = True,
        corpus: Corpus | None = None,
        corpus_name: str | None = None,
    ) -> MilvusRetriever:
        """Open an existing collection for search; no corpus is needed. A collection written by
        ``efficientrag index`` is checked against the encoder settings and for completeness; one of
        the user's own only for its fields and vector dimension. Given a corpus, the collection
        must have been filled from it (unless ``milvus.foreign_collection``): hits from another
        corpus would be scored and used as this one's without a word.

        Args:
            cfg: The retriever config (``cfg.milvus`` for the collection).
            index_dir: Where Milvus Lite's file is when ``milvus.uri`` is None.
            encoder: An already loaded encoder (dense or hybrid).
            show_progress: Show a bar while loading the encoder.
            corpus: The corpus the caller searches for (None: search the collection as it is).
            corpus_name: How errors name ``corpus`` (its file; None: "the given corpus").

        Returns:
            The retriever.

        Raises:
            IndexNotFoundError: No such collection, or an interrupted fill.
            IndexMismatchError: Fields, encoder settings or weights differ.
            CorpusMismatchError: ``corpus`` is not what filled the collection.
            BackendUnavailableError: pymilvus is missing or the server does not answer.
        """
        m = cfg.milvus
        uri = resolve_uri(m, index_dir)
        location = describe_uri(uri, m)
        client = connect(m, uri, create=False)
        if not client.has_collection(m.collection):
            raise IndexNotFoundError(
                location,
                "no such collection (fill it with `efficientrag index` and retriever.kind=milvus, "
                "or set retriever.milvus.collection)",
            )
        info = read_collection(client, m.collection)
        client.load_collection(m.collection)
        needed = [m.id_field, m.title_field, m.text_field]
        needed += [m.dense_field] if m.search in ("dense", "hybrid") else []
        needed += [m.sparse_field] if m.search in ("bm25", "hybrid") else []
        for name in needed:
            if name not in info.fields:
                raise IndexMismatchError(
                    location,
                    "fields",
                    sorted(info.fields),
                    f"a field {name!r}",
                    hint="set retriever.milvus.*_field to your field names, or a milvus.search the collection supports",
                )
        if corpus is not None:
            check_corpus_of(location, info, m, corpus, corpus_name or "the given corpus")
        if info.ours:
            _check_complete(client, location, info, m.collection)
        if m.search in ("dense", "hybrid"):
            if info.ours:
                _check_encoder_name(location, info, cfg, encoder)
            encoder = encoder or _load_encoder(cfg, show_progress)
            check_dense_dim(location, info, m, encoder.dim)
            if info.ours:
                for field, value in encoder.describe().items():
                    key = PROP + field
                    if field != "pooling" and key in info.properties and info.properties[key] != _json(value):
                        raise IndexMismatchError(location, field, info.properties[key], _json(value))
                _check_probe(location, info, encoder)
        return cls._opened(client, cfg, uri, location, encoder, info)

    @classmethod
    def _opened(
        cls, client: Any, cfg: RetrieverConfig, uri: str, location: str, encoder: Any, info: CollectionInfo
    ) -> MilvusRetriever:
        client.load_collection(cfg.milvus.collection)
        meta = {
            "kind": cls.kind,
            "uri": uri,
            "collection": cfg.milvus.collection,
            "search": cfg.milvus.search,
            "rows": count_rows(client, cfg.milvus.collection),
            **{k.removeprefix(PROP): v for k, v in info.properties.items() if k != PROP + "encoder_probe"},
        }
        return cls(client, cfg, location, encoder, meta)

    # --- search --------------------------------------------------------------------------------

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top-``k`` hits per query, all queries in one search request per ``search_batch_size``.

        Args:
            queries: The queries; empty ones get ``[]``.
            k: Hits per query at most.

        Returns:
            One list of hits per query, larger score better (BM25 hits need a shared term).
        """
        queries, k = check_search_args(queries, k)
        results: list[list[Hit]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]
        timings = {"encode": 0.0, "search": 0.0}
        if k == 0 or not live:
            self.last_timings = timings
            return results
        step = self.m.search_batch_size
        for start in range(0, len(live), step):
            part = live[start : start + step]
            texts = [queries[i] for i in part]
            t0 = time.perf_counter()
            vectors = self.encoder.encode_queries(texts).tolist() if self.m.search != "bm25" else None
            t1 = time.perf_counter()
            raw = self._search(texts, vectors, k)
            timings["encode"] += t1 - t0
            timings["search"] += time.perf_counter() - t1
            for i, hits in zip(part, raw, strict=True):
                results[i] = self._hits(hits)
        self.last_timings = timings
        return results

    def _search(self, texts: list[str], vectors: list[list[float]] | None, k: int) -> Any:
        m = self.m
        if m.search in ("dense", "bm25"):
            dense = m.search == "dense"
            return self.client.search(
                m.collection,
                data=vectors if dense else texts,
                anns_field=m.dense_field if dense else m.sparse_field,
                limit=k,
                output_fields=self._fields,
                search_params=self._dense_params(k) if dense else {"metric_type": "BM25"},
            )
        from pymilvus import AnnSearchRequest, RRFRanker

        depth = max(m.hybrid_depth, k)
        requests = [
            AnnSearchRequest(
                data=vectors, anns_field=m.dense_field, param=self._dense_params(depth), limit=depth
            ),
            AnnSearchRequest(
                data=texts, anns_field=m.sparse_field, param={"metric_type": "BM25"}, limit=depth
            ),
        ]
        return self.client.hybrid_search(
            m.collection, requests, RRFRanker(m.rrf_k), limit=k, output_fields=self._fields
        )

    def _dense_params(self, k: int) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.m.index_type == "HNSW":
            params = {"ef": max(self.m.hnsw_ef, k)}
        elif self.m.index_type == "IVF_FLAT":
            params = {"nprobe": self.m.ivf_nprobe}
        return {"metric_type": self.m.metric, "params": params}

    def _hits(self, raw_hits: Any) -> list[Hit]:
        m = self.m
        out = []
        for hit in raw_hits:
            entity = hit.get("entity") or hit
            distance = float(hit["distance"])
            if m.search == "dense":
                score = -distance if m.metric == "L2" else distance
            else:
                score = abs(distance)
                if m.search == "bm25" and score <= 0.0:
                    continue
            chunk: Chunk = chunk_from_stored(
                str(entity[m.id_field]), str(entity.get(m.title_field) or ""), str(entity[m.text_field])
            )
            out.append(Hit(chunk, score))
        return out

    def fingerprint(self) -> str:
        """What an evaluation run records as its index: the collection and what filled it.

        Returns:
            A 16-hex-digit digest of :meth:`describe`.
        """
        from efficientrag.fingerprint import json_digest

        return json_digest(self.describe())

    def describe(self) -> dict[str, Any]:
        """What a run records about its search backend: the uri without credentials, the
        collection, the search mode and what the collection was filled from.

        Returns:
            ``uri`` and those of ``collection``, ``search``, ``rows``, ``store``, ``corpus_size``,
            ``corpus_fingerprint``, ``encoder``, ``dim`` that are known.
        """
        from urllib.parse import urlsplit, urlunsplit

        uri = self.meta["uri"]
        parts = urlsplit(uri)
        if parts.hostname:
            netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
            uri = urlunsplit(parts._replace(netloc=netloc))
        keep = (
            "collection",
            "search",
            "rows",
            "store",
            "corpus_size",
            "corpus_fingerprint",
            "encoder",
            "dim",
        )
        return {"uri": uri, **{k: self.meta[k] for k in keep if k in self.meta}}

    def missing_ids(self, ids: Sequence[str]) -> list[str]:
        """Which of ``ids`` the collection does not hold (evaluation checks its gold ids).

        Args:
            ids: Chunk ids.

        Returns:
            The missing ones, in the order given.
        """
        from efficientrag.retrieval.milvus.index import present_ids

        found = present_ids(self.client, self.m, list(ids))
        return [i for i in ids if i not in found]

    def close(self) -> None:
        """Close the connection (a Lite file is released for other processes)."""
        self.client.close()


def staging_file(uri: str, collection: str, index_dir: str | Path | None) -> Path | None:
    """Where the batch in flight is staged: beside a Lite file, or in the index folder for a server
    (none without one: a killed run then encodes that one batch again).

    Args:
        uri: The resolved Milvus uri.
        collection: The collection's name.
        index_dir: The index folder, if any.

    Returns:
        The staging file's path, or None.
    """
    if not is_server_uri(uri):
        return Path(f"{uri}.{collection}.pending.npz")
    return Path(index_dir) / f"{collection}.pending.npz" if index_dir is not None else None


def _load_encoder(cfg: RetrieverConfig, show_progress: bool) -> Any:
    from efficientrag.retrieval.encoder import Encoder

    return Encoder.from_config(cfg, show_progress=show_progress)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def _check_complete(client: Any, location: str, info: CollectionInfo, name: str) -> None:
    expected = int(info.properties.get(PROP + "corpus_size", "0"))
    have = count_rows(client, name)
    if have != expected:
        raise IndexNotFoundError(
            location,
            f"holds {have} of its {expected} chunks (an interrupted `efficientrag index`: run it "
            "again to resume)",
        )


def _check_encoder_name(location: str, info: CollectionInfo, cfg: RetrieverConfig, encoder: Any) -> None:
    """Before loading a model: a collection filled with another encoder fails at once."""
    from efficientrag.retrieval.encoder import canonical_encoder_name

    saved = info.properties.get(PROP + "encoder")
    wanted = _json(encoder.name if encoder is not None else canonical_encoder_name(cfg.encoder))
    if saved is not None and saved != wanted:
        raise IndexMismatchError(
            location,
            "encoder",
            saved,
            wanted,
            hint="set retriever.encoder to the saved one, or refill the collection",
        )


def _check_probe(location: str, info: CollectionInfo, encoder: Any) -> None:
    from efficientrag.retrieval.dense import check_encoder_probe

    saved = info.properties.get(PROP + "encoder_probe")
    check_encoder_probe(location, saved, encoder, "the probe embedding at fill time")
