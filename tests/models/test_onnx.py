"""The ONNX Runtime backend of the Labeler/Filter: predictions match the torch path (fp32 exactly,
int8 closely) over dynamic batch and sequence sizes, the export is cached, the pipeline config
uses it end to end, and saving keeps the float weights."""

from __future__ import annotations

from typing import get_args

import pytest
import torch

from efficientrag.config import load_config
from efficientrag.models import Filter, Labeler, export
from efficientrag.models.export import QUANTIZE_MODES, is_quantized, quantize_network
from efficientrag.pipeline.config import EfficientRAGConfig, QuantizeMode
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

LONG_TEXT = (
    "The Vant is a long river that rises in the hills north of Osk , flows south through Vantmoor "
    "where Alaric was born in the winter of the flood year , and reaches the sea beyond the marshes ."
)
LONG = LONG_TEXT.split() * 2
PAIRS = [
    (["Where", "was", "Alaric", "born", "?"], ["Alaric", "was", "born", "in", "Vantmoor", "."]),
    (
        ["Who", "is", "Brenna", "?"],
        ["Brenna", "works", "as", "a", "painter", "and", "sculptor", "in", "Osk", "."],
    ),
    (["What", "river", "flows", "through", "the", "town", "?"], LONG),  # cut at max_length 64
    (["Osk", "?"], ["Osk", "."]),
]


@pytest.fixture(autouse=True)
def onnx_cache(tmp_path_factory, monkeypatch):
    """Exports go to a folder of this test session, never to the user's ~/.cache."""
    root = tmp_path_factory.getbasetemp() / "onnx-cache"
    monkeypatch.setenv("EFFICIENTRAG_ONNX_CACHE", str(root))
    return root


@pytest.fixture(scope="module")
def saved(saved_minilm_models):
    return saved_minilm_models


def _max_diff(reference, got, *, tags: bool) -> float:
    worst = 0.0
    for ref, out in zip(reference, got, strict=True):
        assert len(out.word_probs) == len(ref.word_probs)
        worst = max([worst, *(abs(a - b) for a, b in zip(ref.word_probs, out.word_probs, strict=True))])
        if tags:
            worst = max(worst, abs(ref.continue_prob - out.continue_prob))
    return worst


@pytest.mark.numerics
@pytest.mark.parametrize("kind", [Labeler, Filter])
def test_onnx_predictions_match_torch_over_batch_and_sequence_sizes(saved, kind):
    folder = saved / kind.kind
    torch_model = kind.from_pretrained(folder, device="cpu")
    fp32 = kind.from_pretrained(folder, device="cpu").quantize("onnx")
    int8 = kind.from_pretrained(folder, device="cpu").quantize("onnx-int8")
    assert (torch_model.backend, fp32.backend, int8.backend) == ("torch", "onnx", "onnx-int8")
    inputs = PAIRS if kind is Labeler else [(q + ["Info", ":"] + c) for q, c in PAIRS]
    lengths = {len(e) for e in torch_model.encode(inputs)}
    assert len(lengths) == len(inputs) and max(lengths) == 64  # every row its own length, one truncated
    is_labeler = kind is Labeler
    for batch_size in (1, 3):  # batches of one and of three rows (padded to different widths)
        reference = torch_model.predict(inputs, batch_size=batch_size)
        exact = fp32.predict(inputs, batch_size=batch_size)
        assert _max_diff(reference, exact, tags=is_labeler) < 1e-4
        close = int8.predict(inputs, batch_size=batch_size)
        diff = _max_diff(reference, close, tags=is_labeler)
        assert 0 < diff < 0.05  # int8 weights: near, and really a different computation
    # The session really runs the exported graph: its outputs follow the inputs, not a fixed answer.
    assert [p.word_probs for p in exact] != [p.word_probs for p in reversed(exact)]
    # Nothing was written into the model folder.
    assert not list(folder.rglob("*.onnx"))


def test_the_export_is_cached_and_reused(saved, onnx_cache, monkeypatch):
    first = Labeler.from_pretrained(saved / "labeler", device="cpu").quantize("onnx-int8")
    fp32_file = first.onnx.path.parent.parent / "fp32" / export.MODEL_FILE
    assert first.onnx.path.is_relative_to(onnx_cache) and fp32_file.is_file()
    stamps = {p: p.stat().st_mtime_ns for p in (first.onnx.path, fp32_file)}

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(export, "_export", no_export)
    monkeypatch.setattr(export, "_quantize", no_export)
    again = Labeler.from_pretrained(saved / "labeler", device="cpu").quantize("onnx-int8")
    assert again.onnx.path == first.onnx.path
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert again.predict(PAIRS[:2])[0].word_probs == first.predict(PAIRS[:2])[0].word_probs

    # Different weights are a different graph: the cache is keyed by them, not by the folder name.
    changed = Labeler.from_pretrained(saved / "labeler", device="cpu")
    with torch.no_grad():
        changed.network.token_head.bias.add_(1.0)
    with pytest.raises(AssertionError, match="exported again"):
        changed.quantize("onnx")


def test_pipeline_config_runs_both_models_through_onnx_int8(saved):
    corpus = bridge_corpus()
    retriever = WordOverlapRetriever(corpus)
    config = EfficientRAGConfig(
        labeler=str(saved / "labeler"),
        filter=str(saved / "filter"),
        device="cpu",
        quantize="onnx-int8",
        top_k=3,
    )
    rag = EfficientRAG.from_config(retriever, config)
    assert rag.labeler.backend == "onnx-int8" and rag.filter.backend == "onnx-int8"
    result = rag.retrieve("Where was Alaric born?")
    assert result.trace and result.chunks  # the loop runs end to end on both ORT models
    plain_config = EfficientRAGConfig(labeler=config.labeler, filter=config.filter, device="cpu", top_k=3)
    plain = EfficientRAG.from_config(retriever, plain_config)
    assert plain.labeler.backend == "torch" and plain.filter.backend == "torch"
    reference = plain.retrieve("Where was Alaric born?")
    # The first hop labels the same hits; its Continue probabilities come from the int8 graph.
    got = {r.id: r.continue_prob for r in result.trace[0].hits[0]}
    want = {r.id: r.continue_prob for r in reference.trace[0].hits[0]}
    assert got.keys() == want.keys() and len(got) == 3
    assert all(abs(got[k] - want[k]) < 0.05 for k in got)


def test_saving_an_onnx_model_writes_its_float_weights(saved, tmp_path):
    original = Labeler.from_pretrained(saved / "labeler", device="cpu")
    model = Labeler.from_pretrained(saved / "labeler", device="cpu").quantize("onnx-int8")
    model.save_pretrained(tmp_path / "copy")
    assert not list((tmp_path / "copy").rglob("*.onnx"))
    reloaded = Labeler.from_pretrained(tmp_path / "copy", device="cpu")
    assert reloaded.backend == "torch"
    for name, tensor in original.network.state_dict().items():
        assert torch.equal(reloaded.network.state_dict()[name], tensor), name
    assert [p.word_probs for p in reloaded.predict(PAIRS)] == [p.word_probs for p in original.predict(PAIRS)]


def test_modes_are_checked_everywhere_and_combinations_refused(saved):
    assert get_args(QuantizeMode) == QUANTIZE_MODES
    assert load_config(EfficientRAGConfig, None, ["quantize=onnx-int8"]).quantize == "onnx-int8"
    with pytest.raises(
        ValueError,
        match=r"quantize must be one of \['none', 'int8', 'bf16', 'onnx', 'onnx-int8', 'auto'\], got 'onnx-fp16'",
    ):
        EfficientRAGConfig(quantize="onnx-fp16")
    with pytest.raises(ValueError, match="ONNX Runtime"):
        quantize_network(torch.nn.Sequential(torch.nn.Linear(4, 4)), "onnx")
    torch_int8 = Filter.from_pretrained(saved / "filter", device="cpu").quantize("int8")
    with pytest.raises(ValueError, match="int8-quantized"):
        torch_int8.quantize("onnx")
    on_onnx = Filter.from_pretrained(saved / "filter", device="cpu").quantize("onnx")
    with pytest.raises(ValueError, match="already predicts through ONNX Runtime"):
        on_onnx.quantize("int8")
    assert not is_quantized(on_onnx.network)
    with pytest.raises(ValueError, match="CPU only"):
        on_onnx.to("meta")


def test_missing_onnxruntime_says_which_extra_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def without_onnxruntime(name, *args, **kwargs):
        if name == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'", name="onnxruntime")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_onnxruntime)
    with pytest.raises(ImportError, match=r"pip install 'efficientrag\[onnx\]'"):
        export.require_onnx()
