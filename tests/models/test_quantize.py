"""int8 dynamic quantization of the Labeler/Filter: what it replaces, how close its predictions stay,
and what it refuses (saving, other devices, unknown modes), through the model API and the pipeline
config."""

from __future__ import annotations

import pytest
import torch

from efficientrag.models import Filter, Labeler
from efficientrag.models.export import is_quantized, quantize_network
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever

PAIRS = [
    (["Where", "was", "Alaric", "born", "?"], ["Alaric", "was", "born", "in", "Vantmoor", "."]),
    (["Who", "is", "Brenna", "?"], ["Brenna", "works", "as", "a", "painter", "in", "Osk", "."]),
    (["What", "river", "flows", "there", "?"], ["The", "Vant", "flows", "through", "Vantmoor", "."]),
]


@pytest.fixture(scope="module")
def saved(saved_minilm_models):
    return saved_minilm_models


@pytest.mark.numerics
def test_int8_replaces_every_linear_layer_and_stays_close(saved):
    float_model = Labeler.from_pretrained(saved / "labeler", device="cpu")
    n_linear = sum(isinstance(m, torch.nn.Linear) for m in float_model.network.modules())
    assert n_linear > 0 and not is_quantized(float_model.network)
    reference = float_model.predict(PAIRS)

    quantized = Labeler.from_pretrained(saved / "labeler", device="cpu").quantize("int8")
    assert is_quantized(quantized.network)
    assert not any(isinstance(m, torch.nn.Linear) for m in quantized.network.modules())
    got = quantized.predict(PAIRS)
    for ref, q in zip(reference, got, strict=True):
        assert len(q.word_probs) == len(ref.word_probs)
        assert abs(q.continue_prob - ref.continue_prob) < 0.05
        assert max(abs(a - b) for a, b in zip(q.word_probs, ref.word_probs, strict=True)) < 0.05
    # It is a different computation, not the float one under another name.
    assert any(q.word_probs != ref.word_probs for ref, q in zip(reference, got, strict=True))


def test_none_leaves_the_model_unchanged(saved):
    model = Labeler.from_pretrained(saved / "labeler", device="cpu")
    before = model.predict(PAIRS)
    assert model.quantize("none") is model and not is_quantized(model.network)
    assert [p.word_probs for p in model.predict(PAIRS)] == [p.word_probs for p in before]


def test_a_quantized_model_refuses_to_be_saved_or_moved(saved, tmp_path):
    model = Filter.from_pretrained(saved / "filter", device="cpu").quantize("int8")
    with pytest.raises(ValueError, match="cannot be saved"):
        model.save_pretrained(tmp_path / "q")
    assert not (tmp_path / "q").exists()
    with pytest.raises(ValueError, match="CPU only"):
        model.to("meta")


def test_unknown_mode_and_non_cpu_networks_are_refused():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.raises(ValueError, match="quantize must be one of"):
        quantize_network(net, "int4")
    with pytest.raises(ValueError, match=r"quantize must be one of \['none', 'int8', 'bf16'"):
        EfficientRAGConfig(quantize="fp8")
    with pytest.raises(ValueError, match="CPU only"):
        quantize_network(torch.nn.Sequential(torch.nn.Linear(4, 4, device="meta")), "int8")


def test_pipeline_config_quantizes_both_models(saved):
    corpus = bridge_corpus()
    retriever = WordOverlapRetriever(corpus)
    config = EfficientRAGConfig(
        labeler=str(saved / "labeler"), filter=str(saved / "filter"), device="cpu", quantize="int8", top_k=3
    )
    rag = EfficientRAG.from_config(retriever, config)
    assert is_quantized(rag.labeler.network) and is_quantized(rag.filter.network)
    result = rag.retrieve("Where was Alaric born?")
    assert result.trace  # the loop runs end to end on the quantized models
    plain = EfficientRAG.from_config(
        retriever, EfficientRAGConfig(labeler=config.labeler, filter=config.filter)
    )
    assert not is_quantized(plain.labeler.network)


@pytest.mark.numerics
def test_bf16_casts_every_weight_and_stays_close(saved):
    reference = Labeler.from_pretrained(saved / "labeler", device="cpu").predict(PAIRS)
    model = Labeler.from_pretrained(saved / "labeler", device="cpu").quantize("bf16")
    assert {p.dtype for p in model.network.parameters()} == {torch.bfloat16}
    assert model.backend == "torch-bf16" and not is_quantized(model.network)
    got = model.predict(PAIRS)
    for ref, q in zip(reference, got, strict=True):
        assert len(q.word_probs) == len(ref.word_probs)
        assert isinstance(q.continue_prob, float) and abs(q.continue_prob - ref.continue_prob) < 0.05
        assert max(abs(a - b) for a, b in zip(q.word_probs, ref.word_probs, strict=True)) < 0.05
    assert any(q.word_probs != ref.word_probs for ref, q in zip(reference, got, strict=True))


def test_bf16_refuses_saving_and_other_conversions(saved, tmp_path):
    model = Filter.from_pretrained(saved / "filter", device="cpu").quantize("bf16")
    with pytest.raises(ValueError, match=r"quantized for inference \(torch-bf16\) and cannot be saved"):
        model.save_pretrained(tmp_path / "b")
    assert not (tmp_path / "b").exists()
    with pytest.raises(ValueError, match="ONNX Runtime exports the float network"):
        model.quantize("onnx")
    int8 = Filter.from_pretrained(saved / "filter", device="cpu").quantize("int8")
    with pytest.raises(ValueError, match="already runs as torch-int8"):
        int8.quantize("bf16")


def test_bf16_warns_where_the_cpu_has_no_bf16_kernels(monkeypatch):
    from efficientrag.models import export as module

    monkeypatch.setattr(module, "cpu_has_bf16_kernels", lambda: False)
    net = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.warns(RuntimeWarning, match="slower than float32"):
        quantize_network(net, "bf16")
    assert net[0].weight.dtype == torch.bfloat16


def test_pipeline_config_bf16_runs_the_loop(saved):
    retriever = WordOverlapRetriever(bridge_corpus())
    config = EfficientRAGConfig(
        labeler=str(saved / "labeler"), filter=str(saved / "filter"), device="cpu", quantize="bf16", top_k=3
    )
    rag = EfficientRAG.from_config(retriever, config)
    assert rag.labeler.backend == rag.filter.backend == "torch-bf16"
    assert rag.retrieve("Where was Alaric born?").trace
