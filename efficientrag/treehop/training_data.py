"""TreeHop's training set: hop chains as vector indexes, with the vectors cached once per corpus.

The encoder is frozen, so every vector training needs is computed once: chunk vectors are read
back from the pool's dense index (built once per corpus and kept on disk), question vectors are
encoded once, and both are stored with the chains in ``<cache_dir>/<pool>-<fingerprint>``
(``.safetensors`` for the vectors, ``.json`` for ids and chains). The fingerprint covers the
encoder, the corpus, the questions and the chain rules' version, so a cache written under other
inputs is never read.

A training item is one question: the chain paths it trains (every root-to-node path of two or
more chunks: its last chunk is what the query formed along the path must retrieve), its own
non-gold paragraphs (negatives), and its gold chunks (never negatives for its own queries).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file

from efficientrag.atomic import atomic_path, write_text_atomic
from efficientrag.data.schema import Example
from efficientrag.data.split import VALIDATION, split_of
from efficientrag.jsonl import write_jsonl
from efficientrag.training.pool import Pool
from efficientrag.treehop.chains import HopChain, derive_chains
from efficientrag.treehop.vectors import IndexVectors

log = logging.getLogger(__name__)

# Bump when the chain rules or the cached layout change: old caches are then rebuilt.
CACHE_VERSION = 1


@dataclass
class TrainItem:
    question: int  # row of TrainingSet.questions
    paths: list[tuple[int, ...]]  # rows of TrainingSet.chunks
    negatives: list[int]
    gold: list[int]


@dataclass
class TrainingSet:
    """Vectors and items of every pool on one side of the split (rows index the two matrices)."""

    questions: np.ndarray
    chunks: np.ndarray
    items: list[TrainItem] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def num_targets(self) -> int:
        return sum(len(it.paths) for it in self.items)


@dataclass
class PoolVectors:
    """The cached content for one pool (both sides of the split)."""

    question_ids: list[str]
    question_vectors: np.ndarray
    chunk_ids: list[str]
    chunk_vectors: np.ndarray
    chains: list[HopChain]
    negatives: dict[str, list[str]]
    stats: dict[str, Any]


def pool_vectors(pool: Pool, cache_dir: str | Path) -> PoolVectors:
    """The pool's chains and vectors, from the cache when it was written for the same inputs."""
    vectors = IndexVectors(pool.retriever)
    key = _fingerprint(pool, vectors)
    base = Path(cache_dir) / f"{pool.name}-{key[:16]}"
    meta_path, vec_path = _paths(base)
    if meta_path.is_file() and vec_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("fingerprint") == key:
            tensors = load_file(str(vec_path))
            return PoolVectors(
                question_ids=meta["question_ids"],
                question_vectors=tensors["questions"],
                chunk_ids=meta["chunk_ids"],
                chunk_vectors=tensors["chunks"],
                chains=[HopChain.from_dict(c) for c in meta["chains"]],
                negatives={k: list(v) for k, v in meta["negatives"].items()},
                stats=meta["stats"],
            )
    chain_set = derive_chains(pool.examples, pool.corpus)
    base.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(base.parent / f"{pool.name}.chains_rejects.jsonl", chain_set.rejects)
    by_id = {ex.id: ex for ex in pool.examples}
    chains = chain_set.chains
    negatives: dict[str, list[str]] = {}
    needed: dict[str, None] = {}
    for chain in chains:
        gold = set(chain.hops)
        own = [
            c
            for c in dict.fromkeys(by_id[chain.question_id].context_ids)
            if c not in gold and c in pool.corpus
        ]
        negatives[chain.question_id] = own
        needed.update(dict.fromkeys(chain.hops))
        needed.update(dict.fromkeys(own))
    chunk_ids = list(needed)
    rows = np.array([pool.corpus.position(c) for c in chunk_ids], dtype=np.int64)
    chunk_vecs = vectors.chunk_vectors(rows).astype(np.float32)
    question_ids = [c.question_id for c in chains]
    question_vecs = (
        vectors.encode_questions([c.question for c in chains]).astype(np.float32)
        if chains
        else np.empty((0, vectors.dim), dtype=np.float32)
    )
    stats = chain_set.stats()
    meta = {
        "fingerprint": key,
        "pool": pool.name,
        "index": vectors.describe(),
        "question_ids": question_ids,
        "chunk_ids": chunk_ids,
        "chains": [c.to_dict() for c in chains],
        "negatives": negatives,
        "stats": stats,
    }
    _save(base, {"questions": question_vecs, "chunks": chunk_vecs}, meta)
    log.info("TreeHop vectors for %s: %s (cached at %s)", pool.name, stats, base)
    return PoolVectors(question_ids, question_vecs, chunk_ids, chunk_vecs, chains, negatives, stats)


def build_training_sets(
    pools: Sequence[Pool], cache_dir: str | Path, *, validation_ratio: float, split_seed: int
) -> tuple[TrainingSet, dict[str, list[Example]]]:
    """The training side of every pool as one set, and each pool's validation questions (all of
    them, chain or not: the checkpoint is chosen on the real search over them)."""
    q_blocks, c_blocks, items = [], [], []
    info: dict[str, Any] = {"pools": {}}
    validation: dict[str, list[Example]] = {}
    q_offset = c_offset = 0
    for pool in pools:
        pv = pool_vectors(pool, cache_dir)
        val_ids = {
            ex.id
            for ex in pool.examples
            if split_of(ex.id, validation_ratio=validation_ratio, seed=split_seed) == VALIDATION
        }
        validation[pool.name] = [ex for ex in pool.examples if ex.id in val_ids]
        row_of = {c: i for i, c in enumerate(pv.chunk_ids)}
        keep = [i for i, chain in enumerate(pv.chains) if chain.question_id not in val_ids and chain.edges]
        q_blocks.append(pv.question_vectors[keep])
        c_blocks.append(pv.chunk_vectors)
        for new_row, i in enumerate(keep):
            chain = pv.chains[i]
            paths = [tuple(c_offset + row_of[c] for c in p) for p in chain.paths() if len(p) >= 2]
            items.append(
                TrainItem(
                    question=q_offset + new_row,
                    paths=paths,
                    negatives=[c_offset + row_of[c] for c in pv.negatives[chain.question_id]],
                    gold=[c_offset + row_of[c] for c in chain.hops],
                )
            )
        info["pools"][pool.name] = {
            **pv.stats,
            "train_questions_with_edges": len(keep),
            "train_targets": sum(len([p for p in pv.chains[i].paths() if len(p) >= 2]) for i in keep),
            "validation_questions": len(validation[pool.name]),
        }
        q_offset += len(keep)
        c_offset += len(pv.chunk_ids)
    dim = c_blocks[0].shape[1] if c_blocks else 0
    train = TrainingSet(
        questions=np.concatenate(q_blocks) if q_blocks else np.empty((0, dim), dtype=np.float32),
        chunks=np.concatenate(c_blocks) if c_blocks else np.empty((0, dim), dtype=np.float32),
        items=items,
        info=info,
    )
    info["train_questions"] = len(items)
    info["train_targets"] = train.num_targets
    return train, validation


def _fingerprint(pool: Pool, vectors: IndexVectors) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"version": CACHE_VERSION, "index": vectors.describe()}, sort_keys=True).encode())
    for ex in pool.examples:
        h.update(ex.id.encode("utf-8"))
        h.update(b"\x00")
        h.update(ex.question.encode("utf-8"))
        h.update(b"\x01")
        h.update("\x02".join(ex.gold_chunk_ids).encode("utf-8"))
        h.update(b"\x03")
        h.update(json.dumps(ex.raw, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\x04")
    return h.hexdigest()


def _paths(base: Path) -> tuple[Path, Path]:
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".safetensors")


def _save(base: Path, tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Vectors first, the JSON (which vouches for them) last; each through a rename."""
    meta_path, vec_path = _paths(base)
    with atomic_path(vec_path) as tmp:
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(tmp))
    write_text_atomic(meta_path, json.dumps(meta))
