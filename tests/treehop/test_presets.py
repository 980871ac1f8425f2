"""The TreeHop presets load through the one config loader and say what the docs say they do."""

from pathlib import Path

import pytest

from efficientrag.config import load_config
from efficientrag.errors import ConfigError
from efficientrag.treehop.config import TreeHopTrainConfig

REPO = Path(__file__).resolve().parents[2]
PRESETS = REPO / "configs" / "treehop"


def test_minilm_cpu_preset_trains_on_the_three_train_files_with_the_protocols_split():
    cfg = load_config(TreeHopTrainConfig, PRESETS / "minilm-cpu.yaml")
    assert [d.dataset for d in cfg.train_sets] == ["hotpotqa", "2wikimultihopqa", "musique"]
    assert all("train" in Path(d.path).name for d in cfg.train_sets)
    # benchmarks/retrieval_efficientrag.py's synthesis puts these questions on the validation side.
    assert (cfg.validation_ratio, cfg.split_seed) == (0.25, 1)
    assert cfg.retriever.kind == "dense" and cfg.retriever.encoder == "sentence-transformers/all-MiniLM-L6-v2"
    assert cfg.mixed_precision == "no" and cfg.trackers == []


@pytest.mark.parametrize(
    ("preset", "encoder", "gate"),
    [("bge-m3-gpu", "BAAI/bge-m3", 2048), ("contriever-gpu", "facebook/contriever-msmarco", 2048)],
)
def test_gpu_presets_name_the_papers_encoders(preset, encoder, gate):
    cfg = load_config(TreeHopTrainConfig, PRESETS / f"{preset}.yaml")
    assert cfg.retriever.encoder == encoder and cfg.model.gate_dim == gate
    assert (cfg.learning_rate, cfg.batch_size, cfg.temperature) == (6e-5, 64, 0.15)
    assert [d.dataset for d in cfg.train_sets] == ["2wikimultihopqa"]


def test_a_misspelt_key_names_itself():
    with pytest.raises(ConfigError, match="unknown config key 'model.gate_width'"):
        load_config(TreeHopTrainConfig, PRESETS / "minilm-cpu.yaml", ["model.gate_width=512"])
