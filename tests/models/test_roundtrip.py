"""save_pretrained / from_pretrained round trips, offline, and batched prediction semantics."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from efficientrag.models import Filter, Labeler
from efficientrag.models.model_folder import CONFIG_FILE
from efficientrag.testing.tiny_backbones import tiny_deberta, tiny_modernbert
from efficientrag.testing.token_tasks import sentences

PAIRS = [
    (["Where", "was", "Alaric", "born", "?"], ["Alaric", "was", "born", "in", "Vantmoor", "."]),
    (["Who", "is", "Brenna", "?"], ["Brenna", "works", "as", "a", "painter", ".", "Osric", "too", "."]),
    (["Where", "?"], ["Unbelievably", ",", "Quellbridge", "."]),
]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x == y  # dataclass equality: every probability identical


def test_minilm_labeler_round_trip_gives_identical_predictions(minilm_path, tmp_path):
    lab = Labeler.from_backbone(minilm_path, max_length=64, device="cpu")
    torch.nn.init.normal_(lab.network.token_head.weight, std=0.5)  # make the heads say something
    before = lab.predict(PAIRS)
    folder = lab.save_pretrained(tmp_path / "labeler")
    files = {p.name for p in folder.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "README.md"} <= files
    assert not any(name.endswith((".bin", ".pkl", ".pt")) for name in files)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "efficientrag_labeler" and config["token_labels"] == ["useless", "useful"]
    assert (
        config["tag_labels"] == ["continue", "terminate"] and config["encoder_config"]["model_type"] == "bert"
    )
    again = Labeler.from_pretrained(folder, device="cpu")
    _same(before, again.predict(PAIRS))
    assert len({round(p, 6) for p in before[0].word_probs}) > 1


def test_deberta_round_trip_rebuilds_from_the_saved_config_without_the_backbone(tmp_path):
    backbone = tiny_deberta(tmp_path / "deb", sentences(300))
    lab = Labeler.from_backbone(
        str(backbone), pooling="first", word_aggregation="mean", max_length=48, device="cpu"
    )
    before = lab.predict(PAIRS)
    folder = lab.save_pretrained(tmp_path / "saved")
    shutil.rmtree(backbone)  # nothing may be read from the original backbone folder
    again = Labeler.from_pretrained(folder)
    assert again.config.pooling == "first" and again.config.word_aggregation == "mean"
    assert again.config.max_length == 48 and type(again.tokenizer).__name__ == "DebertaV2Tokenizer"
    _same(before, again.predict(PAIRS))


def test_modernbert_filter_round_trip(tmp_path):
    backbone = tiny_modernbert(tmp_path / "mb", sentences(300))
    flt = Filter.from_backbone(str(backbone), device="cpu")
    words = [["Query", ":", "Where", "was", "the", "painter", "born", "?", "Info", ":", "Alaric"]]
    before = flt.predict(words)
    again = Filter.from_pretrained(flt.save_pretrained(tmp_path / "filter"))
    _same(before, again.predict(words))
    assert len(before[0].word_probs) == len(words[0])


def test_wrong_kind_and_missing_folder_are_refused(minilm_path, tmp_path):
    folder = Filter.from_backbone(minilm_path, device="cpu").save_pretrained(tmp_path / "f")
    with pytest.raises(ValueError, match="filter"):
        Labeler.from_pretrained(folder)
    with pytest.raises(FileNotFoundError, match=CONFIG_FILE):
        Labeler.from_pretrained(tmp_path / "nothing-here")


@pytest.mark.numerics
def test_batching_and_order_do_not_change_predictions(minilm_path):
    lab = Labeler.from_backbone(minilm_path, max_length=64, device="cpu")
    batched = lab.predict(PAIRS, batch_size=8)
    single = [lab.predict([p], batch_size=1)[0] for p in PAIRS]
    for a, b in zip(batched, single, strict=True):
        assert a.continue_prob == pytest.approx(b.continue_prob, abs=1e-5)
        assert a.word_probs == pytest.approx(b.word_probs, abs=1e-5)
        assert len(a.word_probs) == len(b.word_probs)


def test_truncated_words_get_zero_probability_and_are_counted(minilm_path):
    lab = Labeler.from_backbone(minilm_path, max_length=16, device="cpu")
    chunk = ["word"] * 30
    pred = lab.predict([(["Who", "?"], chunk)])[0]
    assert len(pred.word_probs) == 30
    kept = 30 - pred.truncated_words
    assert 0 < kept < 30
    assert all(p == 0.0 for p in pred.word_probs[kept:])
    assert all(p > 0.0 for p in pred.word_probs[:kept])
    assert lab.predict([(["Who", "?"], chunk)], max_length=64)[0].truncated_words == 0
