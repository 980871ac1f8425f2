"""benchmarks/rerank_treehop.py: TreeHop's rows in the rerank benchmark are the chosen settings'
runs, and what it times is the very computation it reports."""

import json

import pytest
import torch

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.models import Labeler
from efficientrag.pipeline.prediction_cache import CachedPredictor
from efficientrag.testing.hashed_dense import HashedDenseRetriever
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.training.pool import Pool
from efficientrag.treehop import TreeHop, TreeHopConfig, TreeHopRetrievalConfig, TreeHopRetriever

BENCHMARK = "rerank_treehop"  # the conftest fixture `bench` imports it
DIM = 32


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A toy pool over a hashed dense index, a random TreeHop and a tiny saved Labeler."""
    root = tmp_path_factory.mktemp("rerank-treehop")
    pooled = load_data(DataConfig(toy=ToyWorldConfig(num_questions=12)))
    pool = Pool("toy", pooled.corpus, list(pooled.examples), HashedDenseRetriever(pooled.corpus, DIM))
    torch.manual_seed(0)
    model = TreeHop.new(
        TreeHopConfig(embed_dim=DIM, gate_dim=16, num_blocks=1, encoder_name="hashed-test-encoder"),
        device="cpu",
    )
    texts = [c.contents for c in pooled.corpus][:300] + [ex.question for ex in pooled.examples]
    backbone = tiny_deberta(root / "deberta", texts)
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "labeler")
    return root, pool, model


def rows(bench, world, combo):
    root, _, model = world
    labeler = CachedPredictor(Labeler.from_pretrained(root / "labeler", device="cpu"))
    return bench.TreeHopRows(
        model, "fp123", "TreeHop@5, 2 hops", "gate1024-lr1e-3", combo, labeler, root / "labeler", "fp123-lab4"
    )


def kept(run_dir) -> dict[str, list[str]]:
    records = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return {r["id"]: r["retrieved_ids"] for r in records}


def test_rows_are_the_chosen_settings_runs_and_the_timers_compute_them(bench, world, tmp_path):
    _, pool, model = world
    chosen = rows(bench, world, (10, 2, 0.2, 2))
    runs = bench.evaluate(chosen, pool, pool.examples, tmp_path)
    assert list(runs) == ["TreeHop@5, 2 hops", "TreeHop@10, 2 hops + Tagger (t0.2, floor 2)"]
    plain, combo = (kept(folder) for _, folder in runs.values())
    # Each run in a folder that names its models: TreeHop's fingerprint, and both for the combination.
    assert [folder.parent.name for _, folder in runs.values()] == ["fp123", "fp123-lab4"]
    # The plain row is TreeHop@5 with 2 hops, as a direct search gives it.
    search = TreeHopRetriever(pool.retriever, model, TreeHopRetrievalConfig(top_k=5, hops=2))
    direct = search.retrieve_batch([ex.question for ex in pool.examples])
    assert plain == {ex.id: r.chunk_ids for ex, r in zip(pool.examples, direct, strict=True)}
    # The Tagger keeps at most the budget, and less than TreeHop@10's two hops propose.
    assert all(len(ids) <= 7 for ids in combo.values())
    assert runs["TreeHop@10, 2 hops + Tagger (t0.2, floor 2)"][0]["retrieval"]["all"]["num_chunks"] < 7.01
    assert plain != combo

    questions = [ex.question for ex in pool.examples]
    batches = [slice(0, 5), slice(5, len(questions))]
    timers = bench.timers(chosen, pool, questions, batches)
    assert list(timers) == list(runs)
    for name, timer in timers.items():
        timed = [r.chunk_ids for batch in timer() for r in batch]
        assert timed == [kept(runs[name][1])[ex.id] for ex in pool.examples], name


def test_without_a_combination_only_treehop_is_reported(bench, world, tmp_path):
    _, pool, _ = world
    chosen = rows(bench, world, None)
    assert list(bench.evaluate(chosen, pool, pool.examples[:3], tmp_path)) == ["TreeHop@5, 2 hops"]
    assert list(bench.timers(chosen, pool, ["q"], [slice(0, 1)])) == ["TreeHop@5, 2 hops"]
    assert "Tagger" not in bench.note(chosen) and "TreeHop@5, 2 hops" in bench.note(chosen)
    assert "t0.2, floor 2" in bench.note(rows(bench, world, (10, 2, 0.2, 2)))
