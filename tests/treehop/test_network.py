"""The TreeHop update network: shapes, the update rule, the gradient path, save/load."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from efficientrag.treehop.configuration import TreeHopConfig
from efficientrag.treehop.model import TreeHop
from efficientrag.treehop.modeling import TreeHopNetwork


def _config(**kw) -> TreeHopConfig:
    base = {"embed_dim": 16, "gate_dim": 24, "num_blocks": 2, "encoder_name": "enc"}
    return TreeHopConfig(**{**base, **kw})


def test_shapes_and_parameter_count_of_the_paper_widths():
    torch.manual_seed(0)
    net = TreeHopNetwork(_config(num_heads=3))
    q, c = torch.randn(5, 16), torch.randn(5, 16)
    assert net(q, c).shape == (5, 16)
    assert net(q[None], c[None]).shape == (1, 5, 16)  # any leading dims
    assert net.project.weight.shape == (16, 3 * 24)
    # The paper checkpoint (BGE-m3, gate 2048, one head, three blocks): 25,192,448 parameters.
    paper = TreeHopNetwork(TreeHopConfig(embed_dim=1024, gate_dim=2048, num_blocks=3, encoder_name="bge"))
    assert sum(p.numel() for p in paper.parameters()) == 25_192_448


def test_update_is_query_minus_chunk_plus_projected_gate():
    torch.manual_seed(0)
    net = TreeHopNetwork(_config())
    q, c = torch.randn(4, 16), torch.randn(4, 16)
    with torch.no_grad():
        gate = net.heads[0](q, c)
        assert torch.allclose(net(q, c), q - c + net.project(gate), atol=1e-6)
        net.project.weight.zero_()
        assert torch.allclose(net(q, c), q - c)


def test_gradient_reaches_every_parameter_and_the_query():
    torch.manual_seed(0)
    net = TreeHopNetwork(_config(num_heads=2))
    q = torch.randn(6, 16, requires_grad=True)
    c = torch.randn(6, 16, requires_grad=True)
    target = torch.randn(6, 16)
    loss = torch.nn.functional.cosine_similarity(net(q, c), target).sum()
    loss.backward()
    for name, p in net.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    assert q.grad.abs().sum() > 0 and c.grad.abs().sum() > 0
    # A second hop built on the first one's output: gradients flow through both updates.
    net.zero_grad()
    q2 = net(net(q, c), c.flip(0))
    q2.sum().backward()
    assert net.heads[0].query.weight.grad.abs().sum() > 0


def test_gate_dropout_acts_in_training_only():
    torch.manual_seed(0)
    net = TreeHopNetwork(_config(dropout=0.5))
    q, c = torch.randn(4, 16), torch.randn(4, 16)
    net.train()
    assert not torch.allclose(net(q, c), net(q, c))
    net.eval()
    assert torch.equal(net(q, c), net(q, c))
    with pytest.raises(ValueError, match="dropout"):
        _config(dropout=1.0)


def test_wrong_inputs_and_config_values_fail_clearly():
    net = TreeHopNetwork(_config())
    with pytest.raises(ValueError, match="width 8 given to a TreeHop network of embed_dim 16"):
        net(torch.randn(2, 8), torch.randn(2, 8))
    with pytest.raises(ValueError, match="must have one shape"):
        net(torch.randn(2, 16), torch.randn(3, 16))
    with pytest.raises(ValueError, match="score_scale"):
        _config(score_scale="feature")
    with pytest.raises(ValueError, match="gate_dim"):
        _config(gate_dim=0)


def test_save_and_load_round_trip(tmp_path):
    torch.manual_seed(1)
    model = TreeHop.new(_config(num_heads=2, score_scale="embed"), device="cpu")
    folder = model.save_pretrained(tmp_path / "th", run_files={"metrics.json": json.dumps({"score": 1.0})})
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "metrics.json", "model.safetensors"]
    loaded = TreeHop.from_pretrained(folder, device="cpu")
    assert loaded.config.score_scale == "embed" and loaded.config.num_heads == 2
    assert loaded.config.encoder_name == "enc"
    rng = np.random.default_rng(0)
    q, c = rng.normal(size=(7, 16)).astype(np.float32), rng.normal(size=(7, 16)).astype(np.float32)
    np.testing.assert_array_equal(model.update(q, c), loaded.update(q, c))
    # Saving a loaded model again keeps the training run's files.
    again = loaded.save_pretrained(tmp_path / "again")
    assert json.loads((again / "metrics.json").read_text()) == {"score": 1.0}
    # transformers' Auto classes know the folder too (trust_remote_code stays off).
    from transformers import AutoModel

    assert isinstance(AutoModel.from_pretrained(str(folder)), TreeHopNetwork)


def test_loading_refuses_what_is_not_a_treehop_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved TreeHop model"):
        TreeHop.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="'bert' is not a TreeHop model"):
        TreeHop.from_pretrained(tmp_path)
    folder = TreeHop.new(_config()).save_pretrained(tmp_path / "ok")
    (folder / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="safetensors only"):
        TreeHop.from_pretrained(folder)
