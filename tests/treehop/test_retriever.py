"""TreeHop's retriever, eval method, training loop mechanics and errors, over a model-free dense
index (hashed random vectors in FAISS), so they run in seconds. Retrieval *quality* is tested in
test_training.py (MiniLM, slow)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.errors import ConfigError
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.testing.hashed_dense import HashedDenseRetriever
from efficientrag.testing.word_overlap import WordOverlapRetriever
from efficientrag.training.pool import Pool
from efficientrag.treehop import TreeHop, TreeHopConfig, TreeHopRetrievalConfig, TreeHopRetriever
from efficientrag.treehop.config import TreeHopModelSettings, TreeHopTrainConfig
from efficientrag.treehop.training import train_treehop
from efficientrag.treehop.training_data import build_training_sets, pool_vectors

DIM = 32


@pytest.fixture(scope="module")
def pool() -> Pool:
    pooled = load_data(DataConfig(toy=ToyWorldConfig(num_questions=80)))
    return Pool("toy", pooled.corpus, list(pooled.examples), HashedDenseRetriever(pooled.corpus, DIM))


def _model(**kw) -> TreeHop:
    torch.manual_seed(0)
    base = {"embed_dim": DIM, "gate_dim": 16, "num_blocks": 1, "encoder_name": "hashed-test-encoder"}
    return TreeHop.new(TreeHopConfig(**{**base, **kw}), device="cpu")


@pytest.mark.numerics
def test_results_agree_with_their_trace(pool):
    search = TreeHopRetriever(pool.retriever, _model(), TreeHopRetrievalConfig(top_k=4, hops=3))
    questions = [ex.question for ex in pool.examples[:6]]
    results = search.retrieve_batch(questions)
    for question, res in zip(questions, results, strict=True):
        assert res.question == question
        assert len(res.chunks) == len(set(res.chunk_ids)) <= 12
        assert res.hops[:4] == [1, 1, 1, 1]  # hop 1 keeps its K
        assert [cid for layer in res.trace for cid in layer.kept] == res.chunk_ids
        for layer in res.trace:
            kept_hits = [h.id for hits in layer.hits for h in hits if h.kept]
            assert sorted(kept_hits) == sorted(layer.kept)
            assert sum(h.expanded for hits in layer.hits for h in hits) <= 4
        # Hop-2 queries are formed from hop 1's kept chunks, hop-3 ones extend hop-2 paths.
        assert {p[0] for p in res.trace[1].queries} <= set(res.trace[0].kept)
        assert all(len(p) == 2 and p[1] in res.trace[1].kept for p in res.trace[2].queries)
        assert res.counters["retrieval_calls"] == sum(len(layer.queries) for layer in res.trace)
        assert res.up_to(1) == res.chunks[:4]
    # One question alone gets the same tree as inside the batch.
    assert search.retrieve(questions[2]).chunk_ids == results[2].chunk_ids
    # Encoded vectors given by the caller give the same result.
    vecs = pool.retriever.encoder.encode_queries(questions)
    assert [r.chunk_ids for r in search.retrieve_batch(questions, question_vectors=vecs)] == [
        r.chunk_ids for r in results
    ]


def test_model_and_index_must_share_the_encoder(pool, tmp_path):
    TreeHopRetriever(pool.retriever, _model())  # accepted
    with pytest.raises(ConfigError, match="embed_dim 384 does not match the index's dimension 32"):
        TreeHopRetriever(pool.retriever, _model(embed_dim=384))
    with pytest.raises(ConfigError, match="names no encoder"):
        TreeHopRetriever(pool.retriever, _model(encoder_name=""))
    with pytest.raises(ConfigError, match="trained over encoder 'BAAI/bge-m3'"):
        TreeHopRetriever(pool.retriever, _model(encoder_name="BAAI/bge-m3"))
    with pytest.raises(ConfigError, match="unnormalized embeddings, but the index holds normalized"):
        TreeHopRetriever(pool.retriever, _model(encoder_normalize=False))
    with pytest.raises(ConfigError, match="needs a dense retriever"):
        TreeHopRetriever(WordOverlapRetriever(pool.corpus), _model())
    with pytest.raises(ConfigError, match="set treehop.model"):
        TreeHopRetriever.from_config(pool.retriever, TreeHopRetrievalConfig())
    with pytest.raises(FileNotFoundError):
        TreeHopRetriever.from_config(pool.retriever, TreeHopRetrievalConfig(model=str(tmp_path / "missing")))
    with pytest.raises(ValueError, match="retriever.kind must be 'dense'"):
        TreeHopTrainConfig(retriever=RetrieverConfig(kind="bm25"))
    with pytest.raises(ValueError, match="pruning"):
        TreeHopRetrievalConfig(pruning="best")  # type: ignore[arg-type]


def test_eval_method_through_the_registry_records_views(pool, tmp_path):
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment.assembly import build_method
    from efficientrag.experiment.config import ExperimentConfig

    folder = _model().save_pretrained(tmp_path / "model")
    cfg = ExperimentConfig()
    cfg.treehop = TreeHopRetrievalConfig(model=str(folder), top_k=3, hops=3)
    method = build_method("TreeHop", cfg, pool.retriever, lambda: None)
    summary = run_method(method, pool.examples[:10], tmp_path / "eval", ks=(), progress=False)
    assert summary["method"] == "treehop" and summary["retrieval"]["all"]["n"] == 10
    # A 3-hop run carries the 1- and 2-hop results as views (the first layers of the same tree).
    views = summary["views"]
    assert set(views) == {"hops=1", "hops=2"}
    assert views["hops=1"]["retrieval"]["num_chunks"] == 3.0
    assert views["hops=1"]["retrieval"]["recall"] <= views["hops=2"]["retrieval"]["recall"]
    assert views["hops=2"]["retrieval"]["recall"] <= summary["retrieval"]["all"]["recall"]
    record = json.loads((tmp_path / "eval" / "predictions.jsonl").read_text().splitlines()[0])
    hops = record["trace"]["hops"]
    assert [h["hop"] for h in hops] == [0, 1, 2] and hops[0]["queries"] == ["question"]
    assert [cid for h in hops for cid in h["kept"]] == record["retrieved_ids"]
    assert all(q.startswith("question > ") for q in hops[1]["queries"])
    assert record["counters"]["llm_calls"] == 0
    assert {"time_encode_s", "time_search_s", "time_model_s"} <= set(summary["counters_mean"])


def test_cli_eval_runs_treehop(tmp_path, monkeypatch, pool):
    """``efficientrag eval --method treehop --treehop FOLDER`` reaches the method with the folder."""
    from efficientrag import cli

    seen = {}

    def fake_build_method(name, cfg, retriever, generator):
        seen["name"], seen["model"] = name, cfg.treehop.model
        raise ConfigError("stop here")

    monkeypatch.setattr("efficientrag.experiment.assembly.build_method", fake_build_method)
    monkeypatch.setattr("efficientrag.retrieval.factory.build_retriever", lambda *a, **k: pool.retriever)
    rc = cli.main(
        [
            "eval",
            "--dataset",
            "toy",
            "--work-dir",
            str(tmp_path),
            "--method",
            "treehop",
            "--treehop",
            "runs/th/best",
        ]
    )
    assert rc == 2 and seen == {"name": "treehop", "model": "runs/th/best"}


def _train_config(tmp_path, **kw) -> TreeHopTrainConfig:
    base = {
        "work_dir": str(tmp_path / "work"),
        "output_dir": str(tmp_path / "model"),
        "validation_ratio": 0.3,
        "model": TreeHopModelSettings(gate_dim=16, num_blocks=1),
        "batch_size": 8,
        "epochs": 2,
        "progress": False,
        "eval_top_k": 3,
    }
    return TreeHopTrainConfig(**{**base, **kw})


def test_training_runs_resumes_and_refuses_a_changed_run(pool, tmp_path):
    cfg = _train_config(tmp_path)
    stopped = train_treehop(replace(cfg, stop_after_steps=3), pools=[pool])
    assert stopped == {"completed": False, "global_step": 3, "epoch": 0}
    with pytest.raises(ConfigError, match="--resume"):
        train_treehop(cfg, pools=[pool])
    with pytest.raises(ConfigError, match=r"batch_size: \d+ -> 4 changed since it started"):
        train_treehop(replace(cfg, batch_size=4), resume=True, pools=[pool])
    done = train_treehop(cfg, resume=True, pools=[pool])
    assert done["completed"] and done["global_step"] == done["total_steps"]
    log = [json.loads(line) for line in (tmp_path / "model" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == list(range(1, done["total_steps"] + 1))
    assert all(np.isfinite(r["loss"]) and r["targets"] > 0 for r in log)
    evals = [json.loads(line) for line in (tmp_path / "model" / "eval_log.jsonl").read_text().splitlines()]
    assert [e["epoch"] for e in evals] == [1, 2]
    best = TreeHop.from_pretrained(tmp_path / "model" / "best")
    assert best.config.encoder_name == "hashed-test-encoder" and best.config.embed_dim == DIM
    assert (
        json.loads((tmp_path / "model" / "best" / "metrics.json").read_text())["epoch"] == done["best_epoch"]
    )
    # A finished run resumed again returns its metrics without training.
    assert train_treehop(cfg, resume=True, pools=[pool])["best_score"] == done["best_score"]


def test_resumed_run_ends_where_an_uninterrupted_one_does(pool, tmp_path):
    straight = train_treehop(_train_config(tmp_path / "a", epochs=1), pools=[pool])
    cfg = _train_config(tmp_path / "b", epochs=1)
    train_treehop(replace(cfg, stop_after_steps=2), pools=[pool])
    resumed = train_treehop(cfg, resume=True, pools=[pool])
    assert resumed["global_step"] == straight["global_step"]
    a = TreeHop.from_pretrained(tmp_path / "a" / "model" / "best").network.state_dict()
    b = TreeHop.from_pretrained(tmp_path / "b" / "model" / "best").network.state_dict()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6, msg=name)


def test_training_vectors_are_cached_per_corpus(pool, tmp_path):
    first = pool_vectors(pool, tmp_path)
    again = pool_vectors(pool, tmp_path)  # read back from the cache
    np.testing.assert_array_equal(first.question_vectors, again.question_vectors)
    assert again.chunk_ids == first.chunk_ids and again.chains == first.chains
    # Chunk vectors are the index's own rows.
    row = pool.corpus.position(first.chunk_ids[0])
    np.testing.assert_allclose(first.chunk_vectors[0], pool.retriever.index.reconstruct(row), atol=1e-6)
    # Other questions over the same corpus are another cache entry.
    pool_vectors(Pool("toy", pool.corpus, pool.examples[:20], pool.retriever), tmp_path)
    assert len(list(tmp_path.glob("*.safetensors"))) == 2


def test_training_set_split_and_negatives(pool, tmp_path):
    train, validation = build_training_sets([pool], tmp_path, validation_ratio=0.3, split_seed=1)
    val_ids = {ex.id for ex in validation["toy"]}
    assert 0 < len(val_ids) < len(pool.examples)
    assert train.info["pools"]["toy"]["validation_questions"] == len(val_ids)
    for item in train.items:
        assert item.paths and all(len(p) >= 2 for p in item.paths)
        assert not set(item.negatives) & set(item.gold)
        assert all(r in item.gold for p in item.paths for r in p)
    assert train.questions.shape == (len(train.items), DIM)
    # No training question is on the validation side.
    pv = pool_vectors(pool, tmp_path)
    trained = {pv.question_ids[i] for i in range(len(pv.question_ids)) if pv.chains[i].edges} - val_ids
    assert len(trained) == len(train.items)


class _ProbLabeler:
    """Continue probability = a fixed function of the chunk's words; records what it read."""

    def __init__(self) -> None:
        self.pairs: list = []

    @staticmethod
    def prob(chunk_words) -> float:
        return (sum(map(ord, " ".join(chunk_words))) % 100) / 100

    def predict(self, pairs, **kw):
        from types import SimpleNamespace

        self.pairs += list(pairs)
        return [SimpleNamespace(continue_prob=self.prob(c)) for _, c in pairs]


def test_tagged_treehop_keeps_the_floor_then_the_surest_candidates_within_the_budget(pool):
    from efficientrag.baselines.treehop import TaggedTreeHopRetrieval
    from efficientrag.text.words import split_words
    from efficientrag.treehop.tagged import TaggedTreeHop, TagSettings

    search = TreeHopRetriever(pool.retriever, _model(), TreeHopRetrievalConfig(top_k=4, hops=2))
    labeler = _ProbLabeler()
    tagged = TaggedTreeHop(search, labeler, TagSettings(tag_threshold=0.3, floor_k=2, chunk_budget=5))
    questions = [ex.question for ex in pool.examples[:5]]
    plain = search.retrieve_batch(questions)
    pairs = 0
    for before, (after, tags) in zip(plain, tagged.retrieve_with_tags(questions), strict=True):
        assert after.chunk_ids[:2] == before.chunk_ids[:2]  # the question's own top 2, untagged
        assert set(tags) == set(before.chunk_ids[2:])  # every other candidate was read once
        rest = after.chunk_ids[2:]
        assert len(after.chunks) <= 5 and all(tags[c] >= 0.3 for c in rest)
        assert [tags[c] for c in rest] == sorted((tags[c] for c in rest), reverse=True)
        surest = sorted((c for c in tags if tags[c] >= 0.3), key=lambda c: -tags[c])[:3]
        assert sorted(rest) == sorted(surest)
        for c in after.chunks[2:]:
            assert tags[c.id] == _ProbLabeler.prob(split_words(c.contents))
        assert after.counters["labeler_pairs"] == len(before.chunks) - 2
        pairs += len(before.chunks) - 2
    assert len(labeler.pairs) == pairs  # one Labeler pass over all questions' candidates
    assert labeler.pairs[0][0] == split_words(questions[0])  # judged against the question
    preds = TaggedTreeHopRetrieval(tagged).run_batch(pool.examples[:2])
    assert preds[0].trace["tags"] and preds[0].counters["llm_calls"] == 0
    with pytest.raises(ValueError, match="floor_k <= chunk_budget"):
        TagSettings(floor_k=8, chunk_budget=7)


def test_max_train_questions_trains_on_a_seeded_subset(pool, tmp_path):
    cfg = _train_config(tmp_path, max_train_questions=5, epochs=1)
    done = train_treehop(cfg, pools=[pool])
    info = json.loads((tmp_path / "model" / "training_data.json").read_text())
    assert info["train_questions_used"] == 5 < info["train_questions"]
    assert done["total_steps"] == 1  # 5 questions, batches of 8
    with pytest.raises(ValueError, match="max_train_questions"):
        _train_config(tmp_path, max_train_questions=-1)


def test_fixed_update_rules_stand_in_for_a_model(pool):
    from efficientrag.treehop.fixed_update import FixedUpdate

    q, c = np.ones((2, DIM), np.float32), np.full((2, DIM), 2.0, np.float32)
    fixed = FixedUpdate.like("chunk", _model())
    np.testing.assert_array_equal(fixed.update(q, c), c)
    np.testing.assert_array_equal(FixedUpdate.like("sum", _model()).update(q, c), q + c)
    np.testing.assert_array_equal(FixedUpdate.like("difference", _model()).update(q, c), q - c)
    # The tree search runs on it like on a trained model: a chunk's own vector retrieves the chunk
    # itself first, which redundancy drops, so hop 2 adds the chunks nearest to hop 1's.
    res = TreeHopRetriever(pool.retriever, fixed, TreeHopRetrievalConfig(top_k=3, hops=2)).retrieve(
        pool.examples[0].question
    )
    assert res.hops[:3] == [1, 1, 1] and len(res.chunks) == len(set(res.chunk_ids))
    assert all(h.pruned == "redundant" for h in (hits[0] for hits in res.trace[1].hits))
    with pytest.raises(ValueError, match="rule must be one of"):
        FixedUpdate("product", embed_dim=DIM, encoder_name="x")
