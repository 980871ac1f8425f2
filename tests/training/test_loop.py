"""The Accelerate loop on a tiny DeBERTa-v2 with its own sentencepiece tokenizer (fully offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from efficientrag.errors import ConfigError, DataFormatError
from efficientrag.models import Filter, Labeler
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows
from efficientrag.training import TrainConfig, train


@pytest.fixture(scope="module")
def deberta(tmp_path_factory) -> str:
    return str(tiny_deberta(tmp_path_factory.mktemp("deberta"), sentences(300)))


@pytest.fixture(scope="module")
def labeler_data(tmp_path_factory) -> Path:
    return write_rows(
        tmp_path_factory.mktemp("lab"), labeler_rows(96, seed=1), labeler_rows(32, seed=2, prefix="v")
    )


@pytest.fixture(scope="module")
def filter_data(tmp_path_factory) -> Path:
    return write_rows(
        tmp_path_factory.mktemp("fil"), filter_rows(96, seed=1), filter_rows(32, seed=2, prefix="v")
    )


def _cfg(backbone: str, data: Path, out: Path, **kw) -> TrainConfig:
    base = dict(
        model="labeler",
        backbone=backbone,
        data_dir=str(data),
        output_dir=str(out),
        learning_rate=3e-3,
        batch_size=16,
        max_length=64,
        warmup_steps=2,
        eval_steps=0,
        save_steps=0,
        logging_steps=1,
        mixed_precision="no",
        max_steps=24,
    )
    base.update(kw)
    return TrainConfig(**base)


def _log(out: Path, name: str = "train_log.jsonl") -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text().splitlines() if line.strip()]


def test_labeler_training_reduces_the_loss_and_saves_a_loadable_best_model(deberta, labeler_data, tmp_path):
    out = tmp_path / "run"
    metrics = train(_cfg(deberta, labeler_data, out, eval_steps=8))
    log = _log(out)
    assert [r["step"] for r in log] == list(range(1, 25))
    first = sum(r["loss"] for r in log[:4]) / 4
    last = sum(r["loss"] for r in log[-4:]) / 4
    assert last < first - 0.1, (first, last)
    assert metrics["completed"] and metrics["global_step"] == 24 and metrics["epochs"] == 4
    assert metrics["selection_metric"] == "mean(token_f1, tag_f1)"
    evals = _log(out, "eval_log.jsonl")
    assert [e["step"] for e in evals] == [8, 16, 24]
    assert metrics["best_score"] == max(e["score"] for e in evals)
    assert json.loads((out / "final_metrics.json").read_text())["global_step"] == 24
    best = Labeler.from_pretrained(out / "best")
    assert best.config.encoder_name == deberta
    assert json.loads((out / "best" / "metrics.json").read_text())["step"] == metrics["best_step"]
    preds = best.predict(
        [(["Where", "was", "Alaric", "born", "?"], ["Alaric", "was", "born", "in", "Vantmoor", "."])]
    )
    assert len(preds[0].word_probs) == 6


def test_filter_training_reduces_the_loss(deberta, filter_data, tmp_path):
    out = tmp_path / "run"
    metrics = train(_cfg(deberta, filter_data, out, model="filter", max_steps=18))
    log = _log(out)
    assert log[-1]["tag_loss"] == 0.0
    assert sum(r["loss"] for r in log[-3:]) / 3 < sum(r["loss"] for r in log[:3]) / 3 - 0.1
    assert metrics["selection_metric"] == "token_f1" and "tag_f1" not in metrics["best"]
    assert isinstance(Filter.from_pretrained(out / "best"), Filter)


def test_stop_and_resume_continues_with_the_same_batches_and_weights(deberta, labeler_data, tmp_path):
    # 96 rows / 16 = 6 batches per epoch with grad accumulation 2 -> 3 steps per epoch; 10 steps
    # cross three epoch boundaries, and the stop at step 4 lands inside the second epoch.
    kw = dict(max_steps=10, grad_accumulation=2, batch_size=8, save_steps=3, eval_steps=5)
    ref = tmp_path / "ref"
    train(_cfg(deberta, labeler_data, ref, **kw))
    out = tmp_path / "resumed"
    partial = train(_cfg(deberta, labeler_data, out, stop_after_steps=4, **kw))
    assert partial == {**partial, "completed": False, "global_step": 4}
    assert not (out / "final_metrics.json").exists()
    state = json.loads((out / "checkpoints" / "last" / "trainer_state.json").read_text())
    assert state["global_step"] == 4 and state["batches_in_epoch"] > 0
    resumed = train(_cfg(deberta, labeler_data, out, **kw), resume=True)
    assert resumed["global_step"] == 10
    # The resumed session read the tokenized rows from the datasets cache; same batches, same losses.
    assert resumed["tokenized_cache"]["train"]["hit"] is True
    a, b = _log(ref), _log(out)
    assert [r["step"] for r in b] == list(range(1, 11))
    assert [r["batch_hash"] for r in a] == [r["batch_hash"] for r in b]
    assert [r["loss"] for r in a] == [r["loss"] for r in b]
    wa = load_file(ref / "checkpoints" / "last" / "model.safetensors")
    wb = load_file(out / "checkpoints" / "last" / "model.safetensors")
    assert all((wa[k] == wb[k]).all() for k in wa)
    assert _log(ref, "eval_log.jsonl") == _log(out, "eval_log.jsonl")
    # A finished run resumes to its stored metrics without training again.
    again = train(_cfg(deberta, labeler_data, out, **kw), resume=True)
    assert again == json.loads((out / "final_metrics.json").read_text())


def test_resume_refuses_a_changed_data_order_and_a_fresh_run_refuses_an_existing_one(
    deberta, labeler_data, tmp_path
):
    out = tmp_path / "run"
    train(_cfg(deberta, labeler_data, out, max_steps=4, stop_after_steps=2))
    with pytest.raises(ConfigError, match="batch_size"):
        train(_cfg(deberta, labeler_data, out, max_steps=4, batch_size=8), resume=True)
    with pytest.raises(ConfigError, match="--resume"):
        train(_cfg(deberta, labeler_data, out, max_steps=4))


def test_malformed_rows_are_skipped_and_recorded(deberta, tmp_path):
    rows = [r.to_dict() for r in labeler_rows(40, seed=3)]
    rows[5]["labels"] = rows[5]["labels"][:-1]  # length mismatch
    lines = [json.dumps(r) for r in rows]
    lines[9] = "{not json"
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("\n".join(lines) + "\n")
    (data / "validation.jsonl").write_text("\n".join(json.dumps(r) for r in rows[20:]) + "\n")
    out = tmp_path / "run"
    metrics = train(_cfg(deberta, data, out, max_steps=2, max_bad_row_fraction=0.1))
    skipped = _log(out, "skipped_rows.jsonl")
    assert metrics["skipped_rows"] == 2 and metrics["train_rows"] == 38
    assert {(s["line"], s["file"].endswith("train.jsonl")) for s in skipped} == {(6, True), (10, True)}
    assert any("labels" in s["error"] for s in skipped) and any("JSON" in s["error"] for s in skipped)
    with pytest.raises(DataFormatError, match=r"train\.jsonl.*line 6"):
        train(_cfg(deberta, data, tmp_path / "strict", max_steps=2, max_bad_row_fraction=0.0))


def test_compat_mode_with_auto_class_weights_and_official_padding(deberta, labeler_data, tmp_path):
    out = tmp_path / "run"
    metrics = train(
        _cfg(
            deberta, labeler_data, out, max_steps=3, compat=True, class_weights="auto", pad_to_max_length=True
        )
    )
    rows = labeler_rows(96, seed=1)
    labels = [x for r in rows for x in r.labels]
    n, pos = len(labels), sum(labels)
    assert metrics["class_weights"] == pytest.approx([n / (2 * (n - pos)), n / (2 * pos)])
    assert metrics["compat"] is True and metrics["global_step"] == 3
