"""``quantize: auto`` (issue 42): bf16 where bfloat16 is fast (a CPU with oneDNN bfloat16 kernels,
or a GPU), float32 elsewhere; a run's fingerprint records what it resolved to, not "auto"."""

from __future__ import annotations

import pytest

from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.run_binding import method_settings
from efficientrag.models import Filter, Labeler, export
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


def test_loaded_models_must_run_on_the_path_the_config_names(saved_minilm_models):
    """A loaded model is not quantized by the loop: a config that asks for another path than the
    model runs on is refused (a run would record bf16 and run float32), naming the fix."""
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.prediction_cache import CachedPredictor
    from efficientrag.testing.scripted_models import bridge_corpus
    from efficientrag.testing.word_overlap import WordOverlapRetriever

    retriever = WordOverlapRetriever(bridge_corpus())
    lab = Labeler.from_pretrained(saved_minilm_models / "labeler", device="cpu")
    fil = CachedPredictor(Labeler.from_pretrained(saved_minilm_models / "labeler", device="cpu"))
    with pytest.raises(
        ValueError, match=r"quantize='bf16' \(bf16\) but the labeler given runs as quantize='none'"
    ):
        EfficientRAG(retriever, lab, fil, EfficientRAGConfig(quantize="bf16", device="cpu"))
    EfficientRAG(retriever, lab, fil, EfficientRAGConfig(quantize="none", device="cpu"))  # matches
    lab.quantize("bf16")
    assert (lab.quantize_mode, fil.model.quantize_mode) == ("bf16", "none")
    with pytest.raises(
        ValueError, match="the filter given runs as quantize='none'"
    ):  # seen through the cache
        EfficientRAG(retriever, lab, fil, EfficientRAGConfig(quantize="bf16", device="cpu"))
    fil.model.quantize("bf16")
    EfficientRAG(retriever, lab, fil, EfficientRAGConfig(quantize="bf16", device="cpu"))
    EfficientRAG(retriever, lab, fil, EfficientRAGConfig(device="cpu"))  # the default takes them as they are


@pytest.mark.parametrize("asked", ["auto", "none"])
def test_job_run_fingerprint_records_the_dtype_that_ran(monkeypatch, saved_minilm_models, tmp_path, asked):
    """``evaluate_efficientrag_run`` over loaded models binds its results to what ran: neither
    "auto" nor the default "none" when the loaded models run bf16."""
    import json

    from efficientrag.data.schema import Example
    from efficientrag.eval.job_runs import evaluate_efficientrag_run
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.testing.scripted_models import bridge_corpus
    from efficientrag.testing.word_overlap import WordOverlapRetriever

    monkeypatch.setattr(export, "cpu_has_bf16_kernels", lambda: True)
    lab = Labeler.from_pretrained(saved_minilm_models / "labeler", device="cpu").quantize("bf16")
    cfg = EfficientRAGConfig(quantize=asked, device="cpu", max_hops=1)
    fil = Filter.from_pretrained(saved_minilm_models / "filter", device="cpu").quantize("bf16")
    rag = EfficientRAG(WordOverlapRetriever(bridge_corpus()), lab, fil, cfg)
    examples = [Example(id="q0", question="Who founded Alpha?", answers=[], gold_chunk_ids=[])]
    summary = evaluate_efficientrag_run(
        cfg, rag.retriever, examples, tmp_path / "run", rag=rag, progress=False
    )
    recorded = json.loads((summary.run_dir / "run.json").read_text(encoding="utf-8"))
    assert recorded["fingerprint"]["settings"]["efficientrag"]["quantize"] == "bf16"
