"""Every active method end to end: registry -> real BM25 -> tiny local model -> resumable runner,
on the toy world and on slices of the shared HotpotQA and 2Wiki samples. The model is random, so
answers are meaningless; the mechanics (prompts, retrieval, budgets, counters, records) are real."""

from __future__ import annotations

import json

import pytest
import torch

from efficientrag.baselines.active.method import ActiveMethod
from efficientrag.baselines.prompts.cot_exemplars import EXEMPLAR_SETS
from efficientrag.baselines.registry import METHODS as REGISTRY
from efficientrag.config import load_config
from efficientrag.eval.runner import run_method
from efficientrag.experiment.assembly import build_method
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import prepare_data
from efficientrag.jsonl import read_jsonl
from efficientrag.llm.generator_config import HFGeneratorConfig
from efficientrag.llm.hf_generator import HFGenerator
from efficientrag.retrieval.factory import build_retriever
from efficientrag.testing.tiny_models import build_tiny_causal_lm

METHODS = sorted(name for name, cls in REGISTRY.items() if issubclass(cls, ActiveMethod))
SMALL = {"num_exemplars": 1, "max_new_tokens": 16, "max_doc_words": 25, "top_k": 2}
SETTINGS = {
    "wo_rag": SMALL,
    "sr_rag": SMALL,
    "fl_rag": {**SMALL, "window": 6},
    "fs_rag": {**SMALL, "step_tokens": 8},
    "flare": {**SMALL, "look_ahead": 8, "theta": 0.3, "beta": 0.2},
    "flare_instruct": SMALL,
    "dragin": {**SMALL, "theta": 0.05, "top_n": 8},
}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    texts = [e.question + " " + e.answer for s in EXEMPLAR_SETS.values() for e in s]
    return build_tiny_causal_lm(tmp_path_factory.mktemp("e2e_lm"), vocab_texts=texts, vocab_size=1024)


@pytest.fixture(scope="module")
def generator(model_path) -> HFGenerator:
    return HFGenerator.from_config(HFGeneratorConfig(model=model_path, batch_size=4))


def _config(work_dir, data: dict) -> ExperimentConfig:
    return load_config(
        ExperimentConfig,
        data={"work_dir": str(work_dir), "data": data, "retriever": {"kind": "bm25"}, "baselines": SETTINGS},
    )


def _run_all(cfg: ExperimentConfig, generator: HFGenerator, limit: int) -> dict[str, list[dict]]:
    pooled = prepare_data(cfg)
    retriever = build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir, show_progress=False)
    examples = pooled.examples[:limit]
    out = {}
    for name in METHODS:
        method = build_method(name, cfg, retriever, lambda: generator)
        # The exemplars follow the dataset.
        assert method.exemplars == EXEMPLAR_SETS[cfg.data.dataset][:1]
        summary = run_method(method, examples, cfg.eval_dir(name), ks=[2], batch_size=limit, progress=False)
        assert summary["num_failed"] == 0, (cfg.eval_dir(name) / "errors.jsonl").read_text()
        assert summary["n"] == len(examples)
        out[name] = list(read_jsonl(cfg.eval_dir(name) / "predictions.jsonl"))
    return out


def _check(records: dict[str, list[dict]]) -> None:
    for name, recs in records.items():
        for r in recs:
            c = r["counters"]
            assert r["answer"] is not None and r["raw_output"] is not None, name
            assert c["llm_calls"] >= 1 and c["completion_tokens"] >= 1, name
            assert c["answer_tokens"] <= SETTINGS[name]["max_new_tokens"], name
            assert len(r["retrieved_ids"]) == c["retrieved_chunks"], name
            if name == "wo_rag":
                assert r["retrieved_ids"] == [] and "retrieval_calls" not in c
            if name in ("sr_rag", "fl_rag", "fs_rag", "flare"):
                assert c["retrieval_calls"] >= 1 and r["retrieved_ids"], name
            if name == "sr_rag":
                assert c["retrieval_calls"] == 1
            if name == "dragin":
                assert c["attention_passes"] >= 1 and c["attention_passes"] == c["answer_calls"]
            assert r["retrieval"]["all"]["num_chunks"] == len(r["retrieved_ids"])


def test_every_method_on_the_toy_world(tmp_path, generator):
    cfg = _config(tmp_path, {"dataset": "toy", "toy": {"seed": 0, "num_questions": 8}})
    records = _run_all(cfg, generator, limit=2)
    _check(records)
    # FL-RAG retrieves once per window: ceil(tokens / window) for a text that never stopped early.
    for r in records["fl_rag"]:
        if r["counters"]["answer_tokens"] == 16:
            assert r["counters"]["retrieval_steps"] == 3


@pytest.mark.parametrize(
    ("dataset", "path"),
    [("hotpotqa", "hotpotqa/dev_ircot.350.jsonl"), ("2wikimultihopqa", "2wikimultihopqa/dev.350.json")],
)
def test_every_method_on_shared_samples(tmp_path, generator, shared_data, dataset, path):
    cfg = _config(tmp_path, {"dataset": dataset, "path": str(shared_data / path), "limit": 2})
    records = _run_all(cfg, generator, limit=1)
    _check(records)


def test_cli_eval_runs_dragin_and_resumes(tmp_path, model_path, capsys):
    from efficientrag.cli import main

    args = [
        "eval",
        "--dataset", "toy",
        "--work-dir", str(tmp_path),
        "--method", "dragin",
        "--limit", "2",
        "data.toy.num_questions=6",
        "retriever.kind=bm25",
        "generator.backend=hf",
        f"generator.hf.model={model_path}",
        *[f"baselines.dragin.{k}={v}" for k, v in SETTINGS["dragin"].items()],
    ]  # fmt: skip
    assert main(args) == 0
    out = tmp_path / "eval" / "dragin"
    first = list(read_jsonl(out / "predictions.jsonl"))
    assert len(first) == 2
    assert main(args) == 0  # resumed: nothing left to do, nothing duplicated
    assert list(read_jsonl(out / "predictions.jsonl")) == first
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counters_mean"]["attention_passes"] >= 1
