"""The reranker's training pairs over the toy world and BM25: gold chunks are positives, negatives are
the search's own non-gold hits, only training-side questions give pairs, and the cache is reused
until one of its inputs changes."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import pytest

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.split import TRAIN, VALIDATION, split_of
from efficientrag.experiment.pools import open_pools
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.training import reranker_pairs
from efficientrag.training.pool import Pool
from efficientrag.training.reranker_config import RerankerTrainConfig
from efficientrag.training.reranker_pairs import pool_pairs, training_pairs, validation_examples


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    sets = [DataConfig(toy=ToyWorldConfig(num_questions=40, seed=s)) for s in (1, 2)]
    return open_pools(sets, RetrieverConfig(kind="bm25"), tmp_path_factory.mktemp("work"), progress=False)


def _cfg(tmp_path, **kw) -> RerankerTrainConfig:
    base = dict(work_dir=str(tmp_path / "work"), negatives=4, top_negatives=2, mine_depth=10, progress=False)
    return RerankerTrainConfig(**{**base, **kw})


def _by_question(rows):
    grouped = defaultdict(list)
    for row in rows:
        grouped[row["question_id"]].append(row)
    return grouped


def test_positives_are_gold_and_negatives_are_the_searchs_own_non_gold_hits(pools, tmp_path):
    cfg = _cfg(tmp_path)
    pool = pools[0]
    rows = pool_pairs(pool, cfg, tmp_path / "cache").rows
    examples = {ex.id: ex for ex in pool.examples}
    assert rows and {r["label"] for r in rows} == {0, 1}
    for qid, mine in _by_question(rows).items():
        ex = examples[qid]
        ranked = [h.chunk.id for h in pool.retriever.search([ex.question], cfg.mine_depth)[0]]
        non_gold = [c for c in ranked if c not in ex.gold_chunk_ids]
        assert sorted(r["chunk_id"] for r in mine if r["label"] == 1) == sorted(set(ex.gold_chunk_ids))
        negatives = [r for r in mine if r["label"] == 0]
        assert len(negatives) == min(cfg.negatives, len(non_gold))
        # The best-ranked non-gold hits first, the rest drawn from below them, all from the search.
        assert [r["chunk_id"] for r in negatives[: cfg.top_negatives]] == non_gold[: cfg.top_negatives]
        assert {r["chunk_id"] for r in negatives[cfg.top_negatives :]} <= set(non_gold[cfg.top_negatives :])
        for r in mine:
            assert r["question"] == ex.question
            assert r["text"] == pool.corpus.get(r["chunk_id"]).contents  # what the index reads
            assert r["rank"] == (ranked.index(r["chunk_id"]) + 1 if r["chunk_id"] in ranked else None)


def test_only_training_side_questions_give_pairs_and_validation_is_the_same_split(pools, tmp_path):
    cfg = _cfg(tmp_path)
    rows, info = training_pairs(pools, cfg)
    ids = {r["question_id"] for r in rows}
    side = {ex.id: split_of(ex.id, validation_ratio=0.25, seed=1) for p in pools for ex in p.examples}
    assert ids == {qid for qid, s in side.items() if s == TRAIN}
    assert VALIDATION in side.values()
    for pool in pools:
        val = validation_examples(pool, cfg)
        assert val and {ex.id for ex in val} == {ex.id for ex in pool.examples if side[ex.id] == VALIDATION}
        assert info["pools"][pool.name]["validation_questions"] == len(val)
    assert info["pairs"] == len(rows) and info["positives"] == sum(r["label"] for r in rows)


def test_deeper_negatives_are_drawn_by_the_seed(pools, tmp_path):
    def deeper(seed):
        rows = pool_pairs(pools[0], _cfg(tmp_path, top_negatives=1, seed=seed), tmp_path / "cache").rows
        return {q: [r["chunk_id"] for r in rs if r["label"] == 0][1:] for q, rs in _by_question(rows).items()}

    first, again, other = deeper(1), deeper(1), deeper(2)
    assert first == again
    assert first != other


def test_the_cache_is_read_back_and_rebuilt_when_an_input_changes(pools, tmp_path, monkeypatch):
    cfg, pool, cache = _cfg(tmp_path), pools[0], tmp_path / "cache"
    first = pool_pairs(pool, cfg, cache)
    calls = []
    real = reranker_pairs.mine_pairs
    monkeypatch.setattr(reranker_pairs, "mine_pairs", lambda *a: calls.append(1) or real(*a))
    again = pool_pairs(pool, cfg, cache)
    assert calls == [] and again.rows == first.rows and again.path == first.path

    more = pool_pairs(pool, dataclasses.replace(cfg, negatives=6), cache)  # a mining setting
    assert calls == [1] and more.path != first.path
    assert sum(1 - r["label"] for r in more.rows) > sum(1 - r["label"] for r in first.rows)

    examples = list(pool.examples)
    edited = next(
        i for i, ex in enumerate(examples) if split_of(ex.id, validation_ratio=0.25, seed=1) == TRAIN
    )
    examples[edited] = dataclasses.replace(
        examples[edited], gold_chunk_ids=examples[edited].gold_chunk_ids[:1]
    )
    changed = pool_pairs(Pool(pool.name, pool.corpus, examples, pool.retriever), cfg, cache)  # a gold label
    assert calls == [1, 1] and changed.path != first.path
    assert sum(r["label"] for r in changed.rows) == sum(r["label"] for r in first.rows) - (
        len(set(pool.examples[edited].gold_chunk_ids)) - 1
    )


def test_files_without_gold_chunks_are_refused_naming_them(pools, tmp_path):
    bare = [dataclasses.replace(ex, gold_chunk_ids=[]) for ex in pools[0].examples]
    pool = Pool("0-nogold", pools[0].corpus, bare, pools[0].retriever)
    with pytest.raises(ValueError, match=r"no training pairs with a gold chunk in 0-nogold"):
        training_pairs([pool], _cfg(tmp_path))
