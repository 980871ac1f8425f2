"""Every answering method with a tiny random local causal LM: the answers are noise, but prompts,
chat templates, stop sequences, batching and token accounting all run for real."""

import pytest

from efficientrag.baselines.prompts.config import PromptConfig
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.eval.runner import run_method
from efficientrag.experiment.assembly import build_method
from efficientrag.experiment.config import EvalSettings, ExperimentConfig
from efficientrag.jsonl import read_jsonl
from efficientrag.testing.word_overlap import WordOverlapRetriever

METHODS = ("direct", "cot", "direct_r", "decompose_r", "iter_retgen", "self_ask")


@pytest.fixture(scope="module")
def tiny_generator(tiny_lm_path):
    from efficientrag.llm.generator_config import HFGeneratorConfig
    from efficientrag.llm.hf_generator import HFGenerator

    # No exemplars and three documents keep every prompt short for the tiny model (1024 positions).
    return HFGenerator.from_config(HFGeneratorConfig(model=tiny_lm_path, device="cpu", batch_size=4))


@pytest.fixture(scope="module")
def toy():
    return load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(num_questions=2, seed=5)))


def _config():
    cfg = ExperimentConfig(eval=EvalSettings(ks=[3], answer=True))
    b = cfg.baselines
    b.prompts = PromptConfig(exemplars=0)
    b.direct.max_new_tokens = 8
    b.cot.max_new_tokens = 8
    b.direct_r.top_k = 3
    b.direct_r.max_new_tokens = 8
    b.decompose_r.top_k = 3
    b.decompose_r.decompose_max_new_tokens = 8
    b.decompose_r.max_new_tokens = 8
    b.iter_retgen.top_k = 3
    b.iter_retgen.iterations = 2
    b.iter_retgen.max_new_tokens = 8
    b.self_ask.top_k = 3
    b.self_ask.step_max_new_tokens = 8
    b.self_ask.answer_max_new_tokens = 8
    b.self_ask.final_max_new_tokens = 6
    return cfg


@pytest.mark.parametrize("name", METHODS)
def test_method_runs_end_to_end_with_a_local_model(name, tiny_generator, toy, tmp_path):
    cfg = _config()
    retriever = WordOverlapRetriever(toy.corpus)
    method = build_method(name, cfg, retriever, lambda: tiny_generator)
    before = tiny_generator.counters.snapshot()
    summary = run_method(method, toy.examples, tmp_path, ks=[3], batch_size=3, progress=False)
    spent = tiny_generator.counters.since(before)
    records = list(read_jsonl(tmp_path / "predictions.jsonl"))
    assert summary["num_failed"] == 0 and len(records) == len(toy.examples)
    for r in records:
        assert isinstance(r["answer"], str)
        assert set(r["qa"]) == {"em", "f1", "contained"}
        assert r["counters"]["llm_calls"] >= 1
        assert r["counters"]["completion_tokens"] >= 0 and r["counters"]["prompt_tokens"] > 0
    # The per-question counters add up to exactly what the model processed.
    assert sum(r["counters"]["prompt_tokens"] for r in records) == spent["prompt_tokens"]
    assert sum(r["counters"]["completion_tokens"] for r in records) == spent["completion_tokens"]
    assert sum(r["counters"]["llm_calls"] for r in records) == spent["prompts"]
    if name == "iter_retgen":
        assert all(r["counters"]["llm_calls"] == 2 and r["counters"]["retrieval_calls"] == 2 for r in records)
    if name == "direct_r":
        assert all(
            r["counters"]["llm_calls"] == 1 and len(r["trace"]["answer_call"]["context_ids"]) == 3
            for r in records
        )
    if name == "self_ask":
        # A random model writes no follow-ups: each question ends with a forced final answer.
        for r in records:
            steps = r["counters"]["iterations"]
            follow_ups = r["counters"]["follow_ups"]
            assert r["counters"]["llm_calls"] == steps + follow_ups + r["counters"].get("forced_finals", 0)
