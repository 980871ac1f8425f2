"""``quantize: auto`` (issue 42): bf16 where bfloat16 is fast (a CPU with oneDNN bfloat16 kernels,
or a GPU), float32 elsewhere; a run's fingerprint records what it resolved to, not "auto"."""

from __future__ import annotations

import pytest

from efficientrag.experiment import ExperimentConfig, method_settings
from efficientrag.models import Labeler, export
from efficientrag.models.export import is_bf16, resolve_quantize
from efficientrag.pipeline.config import EfficientRAGConfig


@pytest.mark.parametrize(("kernels", "expected"), [(True, "bf16"), (False, "none")])
def test_auto_is_bf16_only_where_the_cpu_has_bfloat16_kernels(monkeypatch, kernels, expected):
    monkeypatch.setattr(export, "cpu_has_bf16_kernels", lambda: kernels)
    assert resolve_quantize("auto", "cpu") == expected
    assert resolve_quantize("int8", "cpu") == "int8"  # every other mode is itself
    with pytest.raises(ValueError, match="quantize must be one of"):
        resolve_quantize("fast", "cpu")


@pytest.mark.parametrize(("kernels", "bf16"), [(True, True), (False, False)])
def test_auto_quantizes_a_loaded_model_as_resolved(saved_minilm_models, monkeypatch, kernels, bf16):
    monkeypatch.setattr(export, "cpu_has_bf16_kernels", lambda: kernels)
    model = Labeler.from_pretrained(saved_minilm_models / "labeler", device="cpu").quantize("auto")
    assert is_bf16(model.network) is bf16


@pytest.mark.parametrize(("kernels", "recorded"), [(True, "bf16"), (False, "none")])
def test_run_fingerprint_records_the_resolved_dtype(monkeypatch, kernels, recorded):
    monkeypatch.setattr(export, "cpu_has_bf16_kernels", lambda: kernels)
    cfg = ExperimentConfig(efficientrag=EfficientRAGConfig(quantize="auto", device="cpu"))
    assert method_settings(cfg, "efficientrag")["efficientrag"]["quantize"] == recorded
    explicit = ExperimentConfig(efficientrag=EfficientRAGConfig(quantize="bf16", device="cpu"))
    assert method_settings(explicit, "efficientrag")["efficientrag"]["quantize"] == "bf16"
