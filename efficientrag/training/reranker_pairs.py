"""The reranker's training pairs: (question, chunk) with label 1 for a gold chunk, 0 otherwise.

Positives are the question's gold chunks (``Example.gold_chunk_ids``). Negatives are hard ones
from the search the reranker will rerank: the question's top ``mine_depth`` hits that are not gold,
at most ``negatives`` of them, the ``top_negatives`` best-ranked first and the rest drawn at random
(seeded by the run's seed and the question id) from the non-gold hits below them. Only questions on
the training side of :func:`efficientrag.data.split.split_of` give pairs; the validation side
chooses the epoch (:mod:`efficientrag.training.reranker_validation`).

The text is ``Chunk.contents`` (``"{title}: {text}"``), what BM25 and the dense index read and
what the ``rerank`` method hands the cross-encoder. Pairs are written per training file as JSONL
(``question_id``, ``question``, ``chunk_id``, ``text``, ``label``, ``rank``: the 1-based rank of
the hit, null for a gold chunk the search missed) in ``<work_dir>/reranker_pairs/<pool>-<key>``,
with a JSON written last that vouches for it. The key is a hash of everything the pairs depend on
(questions, gold ids, corpus, the search, the mining settings, the split), so a cache written
under other inputs is never read.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from efficientrag.atomic import write_text_atomic
from efficientrag.config_values import to_dict
from efficientrag.data.schema import Chunk, Example
from efficientrag.data.split import TRAIN, VALIDATION, split_of
from efficientrag.errors import InvalidArgumentError
from efficientrag.fingerprint import json_digest
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.retrieval.fingerprint import retriever_fingerprint
from efficientrag.training.pool import Pool
from efficientrag.training.reranker_config import RerankerTrainConfig

log = logging.getLogger(__name__)

# Bump when the mining rules or the file layout change: old caches are then rebuilt.
PAIRS_VERSION = 1
PAIR_FIELDS = ("question_id", "question", "chunk_id", "text", "label", "rank")
SEARCH_BATCH = 64  # questions per retriever call


@dataclass
class PoolPairs:
    """One training file's pairs and how they were mined.

    Attributes:
        pool: The pool's name.
        rows: The pairs (``PAIR_FIELDS``), grouped by question, positives first.
        stats: Counts: questions on each side, questions without gold, pairs by label, gold chunks
            the search found within ``mine_depth``.
        path: The cached JSONL.
    """

    pool: str
    rows: list[dict[str, Any]]
    stats: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def side_of(example: Example, cfg: RerankerTrainConfig) -> str:
    """``"train"`` or ``"validation"``: the synthesis' and TreeHop's split of the same question."""
    return split_of(example.id, validation_ratio=cfg.validation_ratio, seed=cfg.split_seed)


def validation_examples(pool: Pool, cfg: RerankerTrainConfig) -> list[Example]:
    """The pool's validation questions that have gold chunks (the only ones recall can score)."""
    return [ex for ex in pool.examples if ex.gold_chunk_ids and side_of(ex, cfg) == VALIDATION]


def pool_pairs(pool: Pool, cfg: RerankerTrainConfig, cache_dir: str | Path) -> PoolPairs:
    """The pool's training pairs, read from the cache when it was written for the same inputs.

    Args:
        pool: The training file with its corpus and its search.
        cfg: The run's settings (mining, split and seed).
        cache_dir: Where the pairs are cached (``<work_dir>/reranker_pairs``).

    Returns:
        The pairs of the pool's training-side questions, with their statistics.
    """
    key = pairs_fingerprint(pool, cfg)
    base = Path(cache_dir) / f"{pool.name}-{key[:16]}"
    meta_path, rows_path = base.with_suffix(".json"), base.with_suffix(".jsonl")
    if meta_path.is_file() and rows_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("fingerprint") == key:
            rows = list(read_jsonl(rows_path))
            return PoolPairs(pool.name, rows, meta["stats"], rows_path)
    rows, stats = mine_pairs(pool, cfg)
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(rows_path, rows)  # atomic; the JSON that vouches for it comes last
    write_text_atomic(
        meta_path, json.dumps({"fingerprint": key, "pool": pool.name, "stats": stats}, indent=2)
    )
    log.info("reranker pairs for %s: %s (cached at %s)", pool.name, stats, rows_path)
    return PoolPairs(pool.name, rows, stats, rows_path)


def mine_pairs(pool: Pool, cfg: RerankerTrainConfig) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Search every training-side question once and pair it with its gold and hard-negative chunks.

    Returns:
        The pairs (grouped by question, positives first) and their statistics.
    """
    train = [ex for ex in pool.examples if side_of(ex, cfg) == TRAIN]
    with_gold = [ex for ex in train if ex.gold_chunk_ids]
    stats: dict[str, Any] = {
        "questions": len(pool.examples),
        "train_questions": len(with_gold),
        "train_questions_without_gold": len(train) - len(with_gold),
        "validation_questions": len(validation_examples(pool, cfg)),
        "gold_missing_from_corpus": 0,
        "gold_found_in_depth": 0,
        "positives": 0,
        "negatives": 0,
    }
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=len(with_gold), desc=f"mine pairs {pool.name}", disable=not cfg.progress)
    for start in range(0, len(with_gold), SEARCH_BATCH):
        batch = with_gold[start : start + SEARCH_BATCH]
        results = pool.retriever.search([ex.question for ex in batch], cfg.mine_depth)
        for ex, hits in zip(batch, results, strict=True):
            rows.extend(_question_pairs(ex, [h.chunk for h in hits], pool, cfg, stats))
        bar.update(len(batch))
    bar.close()
    return rows, stats


def _question_pairs(
    ex: Example, ranked: Sequence[Chunk], pool: Pool, cfg: RerankerTrainConfig, stats: dict[str, Any]
) -> list[dict[str, Any]]:
    """One question's positives (its gold chunks) and negatives (non-gold hits, see the module)."""
    gold = list(dict.fromkeys(ex.gold_chunk_ids))
    rank = {c.id: i + 1 for i, c in enumerate(ranked)}
    rows = []
    for chunk_id in gold:
        if chunk_id not in pool.corpus:
            stats["gold_missing_from_corpus"] += 1
            continue
        stats["gold_found_in_depth"] += chunk_id in rank
        rows.append(_pair(ex, pool.corpus.get(chunk_id), 1, rank.get(chunk_id)))
    others = [c for c in ranked if c.id not in set(gold)]
    chosen = others[: cfg.top_negatives]
    deeper = others[cfg.top_negatives :]
    wanted = min(cfg.negatives - len(chosen), len(deeper))
    if wanted > 0:
        rng = random.Random(f"{cfg.seed}\x00{ex.id}")
        chosen += [deeper[i] for i in sorted(rng.sample(range(len(deeper)), wanted))]
    rows.extend(_pair(ex, c, 0, rank[c.id]) for c in chosen)
    stats["positives"] += sum(r["label"] for r in rows)
    stats["negatives"] += len(chosen)
    return rows


def _pair(ex: Example, chunk: Chunk, label: int, rank: int | None) -> dict[str, Any]:
    return {
        "question_id": ex.id,
        "question": ex.question,
        "chunk_id": chunk.id,
        "text": chunk.contents,
        "label": label,
        "rank": rank,
    }


def pairs_fingerprint(pool: Pool, cfg: RerankerTrainConfig) -> str:
    """A hash of everything a pool's pairs depend on: questions and gold ids, the corpus, the
    search, the mining settings, the split and the seed (which draws the deeper negatives)."""
    questions = [[ex.id, ex.question, list(ex.gold_chunk_ids)] for ex in pool.examples]
    return json_digest(
        {
            "version": PAIRS_VERSION,
            "questions": json_digest(questions, 64),
            "corpus": pool.corpus.fingerprint(),
            "search": retriever_fingerprint(pool.retriever),
            "retriever": to_dict(cfg.retriever, checks=False) | {"index_dir": None},
            "mining": {k: getattr(cfg, k) for k in ("negatives", "top_negatives", "mine_depth", "seed")},
            "split": [cfg.validation_ratio, cfg.split_seed],
        },
        64,
    )


def training_pairs(
    pools: Sequence[Pool], cfg: RerankerTrainConfig
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every pool's training pairs in one list, and per-pool statistics.

    Args:
        pools: The training files (``efficientrag.experiment.pools.open_pools``).
        cfg: The run's settings; pairs are cached under ``<work_dir>/reranker_pairs``.

    Returns:
        The pairs (pool by pool) and ``{"pools": {name: stats}, "pairs": n, "positives": n}``.

    Raises:
        ValueError: No training-side question with a gold chunk in any pool.
    """
    cache = Path(cfg.work_dir) / "reranker_pairs"
    rows: list[dict[str, Any]] = []
    info: dict[str, Any] = {"pools": {}}
    for pool in pools:
        pairs = pool_pairs(pool, cfg, cache)
        rows.extend(pairs.rows)
        info["pools"][pool.name] = {**pairs.stats, "file": str(pairs.path)}
    info["pairs"] = len(rows)
    info["positives"] = sum(r["label"] for r in rows)
    if not any(r["label"] for r in rows):
        names = ", ".join(p.name for p in pools)
        raise InvalidArgumentError(
            f"no training pairs with a gold chunk in {names}: the training files' questions have no "
            "gold_chunk_ids on the training side (check train_sets and validation_ratio)"
        )
    return rows, info
