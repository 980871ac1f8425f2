from pathlib import Path

import pytest

from efficientrag.config import load_config
from efficientrag.experiment.config import ExperimentConfig

PRESET_DIR = Path(__file__).resolve().parents[2] / "configs" / "paper" / "efficientrag"
PRESETS = sorted(p for p in PRESET_DIR.glob("*.yaml") if not p.name.startswith("_"))


def test_there_is_one_preset_per_dataset():
    assert [p.stem for p in PRESETS] == ["2wikimultihopqa", "hotpotqa", "musique"]


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_paper_preset_loads_with_the_papers_setting(path):
    cfg = load_config(ExperimentConfig, path)
    assert cfg.data.dataset == path.stem
    assert cfg.data.path and cfg.work_dir.endswith(path.stem)
    assert cfg.generator.backend == "openai"
    assert cfg.generator.openai.llm.base_url == "http://localhost:8000/v1"
    assert cfg.generator.openai.llm.model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert cfg.retriever.kind == "dense" and cfg.retriever.encoder == "facebook/contriever-msmarco"
    b = cfg.baselines
    assert b.direct_r.top_k == b.decompose_r.top_k == b.iter_retgen.top_k == b.self_ask.top_k == 10
    assert b.iter_retgen.iterations == 3 and b.self_ask.max_follow_ups == 5
    assert cfg.eval.answer and cfg.eval.ks == [10, 20, 30]
    assert cfg.efficientrag.top_k == 10
    assert not b.judge.enabled and b.judge.llm.model


def test_overrides_reach_the_baseline_settings():
    cfg = load_config(
        ExperimentConfig,
        PRESETS[0],
        ["baselines.iter_retgen.iterations=2", "baselines.prompts.dataset=generic"],
    )
    assert cfg.baselines.iter_retgen.iterations == 2 and cfg.baselines.prompts.dataset == "generic"
