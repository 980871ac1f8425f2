"""TreeHop trained on the toy world with the Accelerate loop over MiniLM: it must beat Direct-R at
equal chunk count on held-out questions, by a margin an untrained network does not reach.

Slow (indexing the toy world with MiniLM and ten epochs of training: about a minute on two idle
cores); the fast tests of the same code over a model-free index are in test_retriever.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.eval.chunk_curve import value_at
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.factory import build_retriever
from efficientrag.retrieval.metrics import mean_scores, score_retrieval
from efficientrag.training.pool import Pool
from efficientrag.treehop import TreeHop, TreeHopRetrievalConfig
from efficientrag.treehop.config import TreeHopModelSettings, TreeHopTrainConfig
from efficientrag.treehop.training import train_treehop
from efficientrag.treehop.validation import search_scores

pytestmark = pytest.mark.slow

MARGIN = 5.0  # recall and all-gold points over Direct-R at the same number of chunks


@pytest.fixture(scope="module")
def toy(minilm_path, tmp_path_factory):
    pooled = load_data(DataConfig(toy=ToyWorldConfig(num_questions=300)))
    root = tmp_path_factory.mktemp("treehop-toy")
    retriever = build_retriever(RetrieverConfig(encoder=minilm_path), pooled.corpus, root / "index")
    return Pool("toy", pooled.corpus, list(pooled.examples), retriever), root


def _config(root: Path, **kw) -> TreeHopTrainConfig:
    base = {
        "work_dir": str(root / "work"),
        "output_dir": str(root / "model"),
        "validation_ratio": 0.3,
        "model": TreeHopModelSettings(gate_dim=384, num_blocks=2),
        "learning_rate": 3e-3,
        "batch_size": 32,
        "epochs": 10,
        "eval_every_epochs": 10,
        "progress": False,
    }
    return TreeHopTrainConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def trained(toy):
    pool, root = toy
    torch.manual_seed(0)
    metrics = train_treehop(_config(root), pools=[pool])
    return Path(root / "model"), metrics


def _held_out(pool: Pool) -> list:
    from efficientrag.data.split import VALIDATION, split_of

    return [ex for ex in pool.examples if split_of(ex.id, validation_ratio=0.3, seed=1) == VALIDATION]


def _direct_curve(pool: Pool, examples: list) -> dict[str, dict[float, float]]:
    hits = pool.retriever.search([ex.question for ex in examples], 20)
    curves: dict[str, dict[float, float]] = {"recall": {}, "all_gold": {}}
    for k in (5, 10, 15, 20):
        scores = mean_scores(
            [
                score_retrieval(
                    [h.id for h in hs[:k]], [h.chunk.contents for h in hs[:k]], ex.gold_chunk_ids, ex.answers
                )
                for ex, hs in zip(examples, hits, strict=True)
            ]
        )
        for metric in curves:
            curves[metric][float(k)] = scores[metric]
    return curves


def test_training_on_the_toy_world_beats_direct_r_at_equal_chunks(toy, trained):
    pool, _ = toy
    folder, metrics = trained
    assert metrics["completed"] and metrics["best_epoch"] == 10
    held_out = _held_out(pool)
    settings = TreeHopRetrievalConfig(top_k=5, hops=2)
    ours = search_scores(
        TreeHop.from_pretrained(folder / "best"), {"toy": pool.retriever}, {"toy": held_out}, settings
    )
    curve = _direct_curve(pool, held_out)
    k = ours["toy"]["num_chunks"]
    assert 9.0 <= k <= 10.0
    for metric in ("recall", "all_gold"):
        assert ours["toy"][metric] >= value_at(curve[metric], k) + MARGIN, (metric, ours, curve)
    # The margin is the training's: the same network untrained does not reach it.
    torch.manual_seed(0)
    untrained = TreeHop.new(TreeHop.from_pretrained(folder / "best").config)
    base = search_scores(untrained, {"toy": pool.retriever}, {"toy": held_out}, settings)["toy"]
    assert base["recall"] < value_at(curve["recall"], base["num_chunks"]) + MARGIN
    # The checkpoint was chosen by that search on the validation questions, and says so.
    saved = json.loads((folder / "best" / "metrics.json").read_text())
    assert saved["epoch"] == 10 and saved["toy/recall"] == pytest.approx(ours["toy"]["recall"])
