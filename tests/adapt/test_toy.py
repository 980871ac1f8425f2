"""One adaptation round on the toy world: models trained on the relations of people (who made a
work, where its maker was born ...) adapt, from the corpus alone, to questions about the relations
of organizations and places (which studio produced a work, where it is headquartered ...).

Real MiniLM models and BM25; recall is compared at equal chunk counts (a 4-chunk budget that
``fill_budget`` always fills), so the margin is not bought with more chunks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from efficientrag.adapt.config import AdaptConfig
from efficientrag.adapt.job import run_adapt
from efficientrag.data.config import DataConfig
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import prepare_data
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.quickstart.job import (
    QuickstartConfig,
    QuickstartPaths,
    evaluate_efficientrag,
    synthesize,
)
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.retrieval.factory import build_retriever
from efficientrag.testing.toy_relations import PEOPLE, PLACES, record_relations, write_toy_half
from efficientrag.training.run import train_model

MARGIN = 8.0  # recall points; measured: about +18 (49.8 -> 68.2) with these settings
# Pseudo-validation score points between the ratios (issue 39); ratio 0.0 is the original rows only.
RATIO_MARGIN = 5.0
LOOP = EfficientRAGConfig(
    query_mode="merged", top_k=4, tag_threshold=0.2, floor_k=1, chunk_budget=4, budget_policy="best",
    fill_budget=True, max_hops=3,
)  # fmt: skip


@pytest.fixture(scope="module")
def toy(tmp_path_factory, minilm_path):
    """Models trained on the people half; the places half's corpus, questions and retriever."""
    tmp_path = tmp_path_factory.mktemp("toy-adapt")
    source = write_toy_half(tmp_path / "source.jsonl", "people", seed=1, num_questions=160)
    target = write_toy_half(tmp_path / "target.jsonl", "places", seed=2, num_questions=300)
    assert all(set(record_relations(r)) <= PEOPLE for r in source)
    assert all(set(record_relations(r)) <= PLACES for r in target)

    bm25 = RetrieverConfig(kind="bm25")

    def pool(name):
        exp = ExperimentConfig(
            work_dir=str(tmp_path / name),
            data=DataConfig(dataset="musique", path=str(tmp_path / f"{name}.jsonl")),
            retriever=bm25,
        )
        pooled = prepare_data(exp)
        return pooled, build_retriever(bm25, pooled.corpus, exp.index_dir, show_progress=False), exp

    src, src_retriever, _ = pool("source")
    tgt, tgt_retriever, tgt_exp = pool("target")

    cfg = QuickstartConfig(work_dir=str(tmp_path / "qs"), retriever=bm25, progress=False)
    cfg.synth.negatives_per_query = 2
    cfg.labeler = replace(cfg.labeler, backbone=minilm_path, epochs=2, max_length=96, save_steps=0)
    cfg.filter = replace(cfg.filter, backbone=minilm_path, epochs=6, save_steps=0)
    paths = QuickstartPaths(tmp_path / "qs")
    synthesize(
        replace(cfg, data=DataConfig(dataset="musique")), paths, src.corpus, src.examples, src_retriever
    )
    train_model(cfg.labeler, paths.synth / "labeler", paths.labeler)
    train_model(cfg.filter, paths.synth / "filter", paths.filter)
    return {
        "root": tmp_path,
        "cfg": cfg,
        "paths": paths,
        "tgt": tgt,
        "retriever": tgt_retriever,
        "exp": tgt_exp,
    }


def _adapt_config(toy, work: str) -> AdaptConfig:
    paths = toy["paths"]
    adapt = AdaptConfig(
        work_dir=str(toy["root"] / work),
        corpus=str(toy["exp"].data_dir / "corpus.jsonl"),  # the target's paragraphs; no question, no gold
        labeler=str(paths.labeler / "best"),
        filter=str(paths.filter / "best"),
        train_data=str(paths.synth),
        progress=False,
        efficientrag=LOOP,
    )
    adapt.pseudo = replace(adapt.pseudo, max_questions=120)
    adapt.labeler_train = replace(adapt.labeler_train, max_length=96, epochs=2, save_steps=0)
    adapt.filter_train = replace(adapt.filter_train, epochs=6, save_steps=0)
    return adapt


@pytest.mark.slow  # two MiniLM trainings: minutes on a CPU
def test_adapting_to_a_corpus_of_unseen_relations_raises_recall_at_equal_chunks(toy):
    tgt = toy["tgt"]

    def recall(labeler, filt, name):
        rag = replace(LOOP, labeler=str(labeler), filter=str(filt))
        res = evaluate_efficientrag(
            toy["cfg"], rag, toy["retriever"], tgt.examples, toy["root"] / "eval" / name
        )
        summary = res["retrieval"]["all"]
        assert summary["n"] == len(tgt.examples) and summary["num_chunks"] == 4.0
        return summary["recall"]

    before = recall(toy["paths"].labeler / "best", toy["paths"].filter / "best", "unadapted")
    adapt = _adapt_config(toy, "adapt")
    adapt.mix = replace(adapt.mix, labeler_ratio=2.0, filter_ratio=2.0)  # the older spelling: one ratio
    summary = run_adapt(adapt)
    assert summary["kept"] == "adapted"
    after = recall(summary["labeler"], summary["filter"], "adapted")
    assert after >= before + MARGIN, (before, after)


@pytest.mark.slow  # source models (shared with the test above) and two MiniLM fine-tunes
def test_the_mix_ratio_is_chosen_on_the_corpus_pseudo_validation_questions(toy):
    """Candidates 0.0 (the original rows only: no adaptation) and 2.0: adapt scores both on the
    pseudo-validation questions it mined from the corpus and keeps 2.0, by a margin."""
    adapt = _adapt_config(toy, "adapt-choice")
    adapt.mix = replace(adapt.mix, ratios=[0.0, 2.0])
    summary = run_adapt(adapt)
    assert set(summary["scoring_sets"]) == {"pseudo-validation", "pseudo-single"}
    zero, two = summary["stages"]["corpus"]["candidates"]
    assert (zero["ratio"], two["ratio"]) == ("0", "2")
    assert two["score"] >= zero["score"] + RATIO_MARGIN, (zero["score"], two["score"])
    assert summary["stages"]["corpus"]["ratio"] == "2"
    assert zero["finetune_s"] > 0 and two["finetune_s"] > 0
    assert summary["kept"] == "adapted" and summary["labeler"] == str(
        Path(two["folder"]) / "labeler" / "best"
    )
    assert summary["comparison"]["given"]["score"] < two["score"]
