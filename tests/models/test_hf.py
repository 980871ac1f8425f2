"""Saved Labeler/Filter folders as transformers models: Auto classes, config.json, model card, Hub
cache, and the errors for folders that are not ours."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file, save_model
from transformers import AutoConfig, AutoModel

from efficientrag.config import load_config
from efficientrag.models import Filter, Labeler
from efficientrag.models.card import TrainingRecord, render_model_card
from efficientrag.models.configuration import FORMAT_VERSION, FilterConfig, LabelerConfig
from efficientrag.models.modeling import MODEL_INPUTS, FilterModel, LabelerModel
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows
from efficientrag.training import TrainConfig, train

PAIRS = [
    (["Where", "was", "Alaric", "born", "?"], ["Alaric", "was", "born", "in", "Vantmoor", "."]),
    (["Who", "is", "Brenna", "?"], ["Brenna", "works", "as", "a", "painter", ".", "Osric", "too", "."]),
]
WORDS = [["Query", ":", "Where", "was", "the", "painter", "born", "?", "Info", ":", "Alaric"]]


@pytest.fixture(scope="module")
def deberta(tmp_path_factory) -> str:
    return str(tiny_deberta(tmp_path_factory.mktemp("deberta"), sentences(300)))


@pytest.fixture(scope="module")
def trained_run(deberta, tmp_path_factory) -> Path:
    """A Labeler trained a few steps by the real loop; its ``best/`` folder is what users share."""
    root = tmp_path_factory.mktemp("run")
    data = write_rows(root / "data", labeler_rows(32, seed=1), labeler_rows(16, seed=2, prefix="v"))
    cfg = TrainConfig(
        model="labeler",
        backbone=deberta,
        data_dir=str(data),
        output_dir=str(root / "out"),
        learning_rate=3e-3,
        batch_size=16,
        max_length=48,
        max_steps=4,
        warmup_steps=1,
        eval_steps=2,
        save_steps=0,
        mixed_precision="no",
    )
    train(cfg)
    return root / "out"


def _heads_say_something(model: Labeler | Filter) -> None:
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.network.token_head.parameters():
            param.copy_(torch.randn(param.shape, generator=gen) * 0.5)


def _batch(model: Labeler | Filter, inputs) -> dict[str, torch.Tensor]:
    encoded = model.encode(inputs)
    batch = model.collator()(list(enumerate(encoded)))
    return {k: batch[k] for k in MODEL_INPUTS if k in batch}


def test_trained_labeler_loads_with_auto_model_and_labeler_identically(trained_run):
    best = trained_run / "best"
    network = AutoModel.from_pretrained(best)
    assert type(network) is LabelerModel and type(AutoConfig.from_pretrained(best)) is LabelerConfig
    labeler = Labeler.from_pretrained(best)
    assert labeler.max_length == 48 and labeler.config.encoder_config.model_type == "deberta-v2"
    batch = _batch(labeler, PAIRS)
    with torch.no_grad():
        a, b = network.eval()(**batch), labeler.network(**batch)
    assert torch.equal(a.token_logits, b.token_logits) and torch.equal(a.tag_logits, b.tag_logits)
    assert Labeler(network, labeler.tokenizer, device="cpu").predict(PAIRS) == labeler.predict(PAIRS)


def test_trained_folder_has_a_model_card_and_the_config_that_reproduces_it(trained_run):
    best = trained_run / "best"
    final = json.loads((trained_run / "final_metrics.json").read_text())
    card = (best / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: transformers\n")
    assert "# EfficientRAG Labeler" in card and "deberta-v2, hidden size 32, 2 layers" in card
    assert f"step {final['best_step']} of 4; run completed" in card
    assert f"| token_f1 | {final['best']['token_f1']:.4f} |" in card
    assert "\nRows: 32 training, 16 validation, 0 skipped" in card
    assert "accelerate launch train/labeler.py --config train_config.yaml" in card
    saved = load_config(TrainConfig, best / "train_config.yaml")
    assert (
        saved.max_steps == 4
        and saved.data_dir == yaml.safe_load((trained_run / "train_config.yaml").read_text())["data_dir"]
    )


def test_import_efficientrag_alone_registers_the_auto_classes(deberta, trained_run, tmp_path):
    folder = Filter.from_backbone(deberta, max_length=32, device="cpu").save_pretrained(tmp_path / "filter")
    code = (
        "import sys, efficientrag\n"
        "assert 'torch' not in sys.modules\n"
        "from transformers import AutoModel\n"
        f"print(type(AutoModel.from_pretrained({str(trained_run / 'best')!r})).__name__,"
        f" type(AutoModel.from_pretrained({str(folder)!r})).__name__)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.split() == ["LabelerModel", "FilterModel"], run.stderr[-2000:]


def test_config_json_holds_the_encoder_and_every_setting(deberta, tmp_path):
    lab = Labeler.from_backbone(deberta, pooling="pair", max_length=40, device="cpu")
    folder = lab.save_pretrained(tmp_path / "lab")
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "efficientrag_labeler" and config["architectures"] == ["LabelerModel"]
    assert config["format_version"] == FORMAT_VERSION and config["encoder_name"] == deberta
    # Settings at their defaults are written too, so a later default cannot change a saved model.
    assert (config["pooling"], config["max_length"], config["word_aggregation"]) == ("pair", 40, "first")
    assert config["dropout"] == 0.1 and config["id2label"] == {"0": "useless", "1": "useful"}
    enc = config["encoder_config"]
    assert enc["model_type"] == "deberta-v2" and enc["hidden_size"] == 32 and enc["num_hidden_layers"] == 2
    assert enc["relative_attention"] is True and enc["vocab_size"] == len(lab.tokenizer)
    # A Filter: its own model type, no tag labels, no tag head after loading.
    flt_folder = Filter.from_backbone(deberta, device="cpu").save_pretrained(tmp_path / "flt")
    flt_config = json.loads((flt_folder / "config.json").read_text())
    assert flt_config["model_type"] == "efficientrag_filter" and flt_config["tag_labels"] == []
    loaded = AutoModel.from_pretrained(flt_folder)
    assert type(loaded) is FilterModel and loaded.tag_head is None and loaded.config.max_length == 256


def test_model_card_of_a_model_saved_outside_training_says_so(deberta, tmp_path):
    folder = Filter.from_backbone(deberta, device="cpu").save_pretrained(tmp_path / "flt")
    card = (folder / "README.md").read_text()
    assert "# EfficientRAG Filter" in card and "Not recorded" in card and "`drop` / `keep`" in card
    assert "base_model:" not in card  # a local path is not a Hub model
    config = LabelerConfig(encoder_config={"model_type": "bert"}, encoder_name="microsoft/deberta-v3-large")
    record = TrainingRecord(
        train_config={"data_dir": "data/hotpotqa/labeler", "learning_rate": 5e-6, "epochs": 2},
        metrics={"token_f1": 0.8125, "tag_accuracy": 0.9},
        step=200,
        total_steps=400,
        data={"train_rows": 1000, "validation_rows": 100, "skipped_rows": 2},
        selection_metric="mean(token_f1, tag_f1)",
    )
    card = render_model_card(config, record)
    assert "base_model: microsoft/deberta-v3-large" in card
    assert "`data/hotpotqa/labeler`" in card and "| learning_rate | 5e-06 |" in card
    assert "step 200 of 400; run in progress when saved" in card and "| tag_accuracy | 0.9000 |" in card
    assert "tag-head pooling | mean" in card and "2 skipped as malformed" in card


def test_the_cli_refuses_a_folder_without_its_config_in_one_line(deberta, tmp_path, capsys):
    from efficientrag.cli import main

    old = tmp_path / "old"
    old.mkdir()
    save_model(Labeler.from_backbone(deberta, device="cpu").network, str(old / "model.safetensors"))
    flt = Filter.from_backbone(deberta, device="cpu").save_pretrained(tmp_path / "flt")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"id": "a", "title": "Alaric", "text": "Alaric was born in Vantmoor."}) + "\n"
    )
    capsys.readouterr()  # what building the models printed
    code = main(["retrieve", "--corpus", str(corpus), "--work-dir", str(tmp_path / "w"), "-q", "Who?",
                 "--labeler", str(old), "--filter", str(flt), "retriever.kind=bm25"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert f"{old / 'config.json'} not found" in err[0] and "not a saved efficientrag labeler" in err[0]


def test_folders_that_are_not_this_model_are_refused_naming_the_file(deberta, tmp_path):
    flt = Filter.from_backbone(deberta, device="cpu").save_pretrained(tmp_path / "flt")
    with pytest.raises(ValueError, match="holds a 'filter' model, not a 'labeler' model"):
        Labeler.from_pretrained(flt)
    # A plain encoder folder is not a Labeler: say which model_type was found and what to do.
    with pytest.raises(ValueError, match=r"config\.json: model_type 'deberta-v2' .*from_backbone"):
        Labeler.from_pretrained(deberta)
    bad = tmp_path / "bad"
    shutil.copytree(flt, bad)
    config = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**config, "pooling": "median"}))
    with pytest.raises(ValueError, match="'pooling' must be one of"):
        Filter.from_pretrained(bad)
    (bad / "config.json").write_text(json.dumps({**config, "format_version": FORMAT_VERSION + 1}))
    with pytest.raises(ValueError, match="newer than this efficientrag"):
        Filter.from_pretrained(bad)
    # Weights that do not fit the config: transformers would only warn and leave them random.
    (bad / "config.json").write_text(json.dumps(config))
    weights = load_file(bad / "model.safetensors")
    save_file({k: v for k, v in weights.items() if not k.startswith("token_head")}, bad / "model.safetensors")
    with pytest.raises(
        ValueError, match=r"does not match the network described by .*config\.json.*token_head"
    ):
        Filter.from_pretrained(bad)
    lab_folder = Labeler.from_backbone(deberta, device="cpu").save_pretrained(tmp_path / "lab")
    config = json.loads((lab_folder / "config.json").read_text())
    (lab_folder / "config.json").write_text(json.dumps({**config, "pooling": "pair"}))
    with pytest.raises(ValueError, match="tensor shapes differ"):
        Labeler.from_pretrained(lab_folder)
    (bad / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors not found"):
        Filter.from_pretrained(bad)
    with pytest.raises(FileNotFoundError, match="not a Hub name"):
        Filter.from_pretrained(tmp_path / "missing" / "deeper" / "folder")
    with pytest.raises(TypeError, match="abstract"):
        from efficientrag.models.configuration import WordClassifierConfig

        WordClassifierConfig()
    assert FilterConfig().tag_labels == [] and not FilterConfig().has_tag_head


def test_hub_names_resolve_through_the_hub_cache(deberta, tmp_path, monkeypatch):
    """Offline (the tests' HF_HUB_OFFLINE=1), a Hub name loads from the cache and only from there."""
    import huggingface_hub.constants

    flt = Filter.from_backbone(deberta, device="cpu")
    _heads_say_something(flt)
    cache = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--someone--tiny-filter"
    flt.save_pretrained(repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    assert Filter.from_pretrained("someone/tiny-filter").predict(WORDS) == flt.predict(WORDS)
    with pytest.raises(FileNotFoundError, match="'someone/missing' is not a local folder.*cache"):
        Filter.from_pretrained("someone/missing")


def test_push_to_hub_uploads_the_whole_folder(deberta, tmp_path, monkeypatch):
    from huggingface_hub import HfApi

    calls: dict[str, object] = {}

    def create_repo(self, repo_id, **kw):
        calls["created"] = (repo_id, kw.get("private"), kw.get("exist_ok"))

    def upload_folder(self, *, repo_id, folder_path, **kw):
        calls["files"] = sorted(p.name for p in Path(folder_path).iterdir())
        calls["card"] = (Path(folder_path) / "README.md").read_text()
        calls["repo"] = repo_id
        return "https://huggingface.co/someone/tiny-filter/commit/abc"

    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    url = Filter.from_backbone(deberta, device="cpu").push_to_hub("someone/tiny-filter", private=True)
    assert url.endswith("/commit/abc") and calls["created"] == ("someone/tiny-filter", True, True)
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= set(calls["files"])
    assert 'Filter.from_pretrained("someone/tiny-filter")' in calls["card"]
