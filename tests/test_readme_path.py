"""The path a user copies from the README: flags, presets that belong together, thread count and
inference lengths (issue 13's defects, each with the behaviour that was wrong)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from efficientrag.cli import main as cli_main
from efficientrag.config import load_config
from efficientrag.cpu import available_cores
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.quickstart.job import QuickstartConfig
from efficientrag.synth.config import SynthConfig
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    STOPWORDS,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.word_overlap import WordOverlapRetriever
from efficientrag.training.threads import configure_cpu_threads

REPO = Path(__file__).resolve().parents[1]


def test_synth_takes_dash_c_like_every_other_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    out = tmp_path / "synth"
    code = cli_main(
        ["synth", "-c", "configs/synth/toy.yaml", f"out_dir={out}", "--limit", "8", "progress=false"]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["out_dir"] == str(out)
    assert (out / "labeler" / "train.jsonl").is_file()


def test_train_takes_dash_c(capsys):
    # A labeler preset given to the filter entry is refused by the loader: proof that -c was read.
    code = cli_main(["train", "filter", "-c", str(REPO / "configs/labeler/minilm-cpu.yaml")])
    assert code == 2
    assert "not a 'filter'" in capsys.readouterr().err


@pytest.mark.parametrize("dataset", ["hotpotqa", "2wikimultihopqa", "musique", "toy"])
def test_synthesis_presets_make_the_data_the_minilm_presets_are_tuned_for(dataset):
    cfg = load_config(SynthConfig, REPO / f"configs/synth/{dataset}.yaml")
    recipe = QuickstartConfig().synth
    assert cfg.negatives_per_query == recipe.negatives_per_query == 4
    assert cfg.question_positives is recipe.question_positives is True


@pytest.mark.parametrize("dataset", ["hotpotqa", "2wikimultihopqa", "musique"])
def test_paper_scale_synthesis_presets_keep_the_official_recipe(dataset):
    cfg = load_config(SynthConfig, REPO / f"configs/synth/{dataset}-llm.yaml")
    assert cfg.teacher == "llm"
    assert cfg.negatives_per_query == 1 and cfg.question_positives is False


def test_cpu_training_uses_every_available_core_over_accelerates_one(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what `accelerate launch` exports by default
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setattr("efficientrag.training.threads.has_accelerator", lambda: False)
    try:
        torch.set_num_threads(1)
        assert configure_cpu_threads(0) == available_cores() == torch.get_num_threads()
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # two processes on this machine share the cores
        assert configure_cpu_threads(0) == max(1, available_cores() // 2)
        assert configure_cpu_threads(3) == 3 == torch.get_num_threads()  # cpu_threads=3 wins
        with pytest.raises(ValueError, match="cpu_threads"):
            configure_cpu_threads(-1)
    finally:
        torch.set_num_threads(before)


def test_cpu_threads_leave_accelerator_runs_alone(monkeypatch):
    monkeypatch.setattr("efficientrag.training.threads.has_accelerator", lambda: True)
    before = torch.get_num_threads()
    assert configure_cpu_threads(0) is None and torch.get_num_threads() == before


class _LengthRecorder:
    """Wraps a scripted model and records the max_length each predict call was given."""

    def __init__(self, inner):
        self.inner, self.lengths = inner, []

    def predict(self, items, **kw):
        self.lengths.append(kw.get("max_length"))
        return self.inner.predict(items, **kw)


def test_inference_lengths_default_to_the_saved_models_and_can_be_overridden():
    corpus = bridge_corpus()
    retriever = WordOverlapRetriever(corpus, STOPWORDS)
    lab, fil = _LengthRecorder(ScriptedLabeler(USEFUL_WORDS)), _LengthRecorder(InfoOnlyFilter())
    EfficientRAG(retriever, lab, fil, EfficientRAGConfig(top_k=2)).retrieve(ALPHA_QUESTION)
    # None lets each model use the length it was trained with (its saved spec).
    assert set(lab.lengths) == {None} and set(fil.lengths) == {None}
    lab.lengths.clear(), fil.lengths.clear()
    cfg = EfficientRAGConfig(top_k=2, labeler_max_length=128, filter_max_length=64)
    EfficientRAG(retriever, lab, fil, cfg).retrieve(ALPHA_QUESTION)
    assert set(lab.lengths) == {128} and set(fil.lengths) == {64}


def test_a_saved_labeler_infers_at_its_training_length(minilm_path, tmp_path):
    from efficientrag.models import Labeler

    lab = Labeler.from_backbone(minilm_path, max_length=16, device="cpu")
    folder = lab.save_pretrained(tmp_path / "labeler")
    loaded = Labeler.from_pretrained(folder, device="cpu")
    long_chunk = ["word"] * 60
    (enc,) = loaded.encode([(["where", "?"], long_chunk)])
    assert len(enc.input_ids) == 16  # not the 384 of the old EfficientRAGConfig default
    (wide,) = loaded.encode([(["where", "?"], long_chunk)], max_length=48)
    assert len(wide.input_ids) == 48


def test_results_iter_retgen_rows_name_the_iterations_they_ran():
    """Iter-RetGen makes one LLM call and one retrieval per iteration: a row's label must agree
    with its own call counts (a 3-call run was once labeled "2 iterations")."""
    import re

    rows = [
        line
        for line in (REPO / "docs" / "reports" / "components.md").read_text().splitlines()
        if line.startswith("| Iter-RetGen (")
    ]
    assert rows, "docs/reports/components.md has no Iter-RetGen row"
    for row in rows:
        iterations = int(re.search(r"Iter-RetGen \((\d+) iterations?\)", row).group(1))
        cells = [c.strip() for c in row.strip("|").split("|")]
        llm_calls, retrieval_calls = float(cells[5]), float(cells[6])
        assert llm_calls == retrieval_calls == iterations, row
