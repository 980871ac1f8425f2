"""The cross-encoder reranker's training on the toy world, BM25 and a tiny BERT with its own
tokenizer (seconds, offline): the best epoch in the CrossEncoder layout, resume, refusals, entries."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from sentence_transformers import CrossEncoder

from efficientrag.cli import main as cli_main
from efficientrag.cli.train_reranker import main as script_main
from efficientrag.config import load_config
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.errors import ConfigError
from efficientrag.experiment.pools import open_pools
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.testing.tiny_backbones import tiny_bert
from efficientrag.training.reranker import train_reranker
from efficientrag.training.reranker_config import RerankerTrainConfig
from efficientrag.training.reranker_pairs import training_pairs, validation_examples
from efficientrag.training.reranker_validation import RerankValidation

SETS = [DataConfig(toy=ToyWorldConfig(num_questions=40, seed=s)) for s in (1, 2)]


@pytest.fixture(autouse=True)
def one_thread():
    """Seconds, not minutes, on a shared CPU: tiny matrices gain nothing from a second thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("reranker-work")


@pytest.fixture(scope="module")
def pools(work):
    return open_pools(SETS, RetrieverConfig(kind="bm25"), work, progress=False)


@pytest.fixture(scope="module")
def bert(pools, tmp_path_factory) -> str:
    texts = [c.contents for p in pools for c in p.corpus] + [ex.question for p in pools for ex in p.examples]
    return str(tiny_bert(tmp_path_factory.mktemp("bert"), texts))


def _cfg(work: Path, bert: str, out: Path, **kw) -> RerankerTrainConfig:
    base = dict(
        train_sets=SETS,
        work_dir=str(work),
        output_dir=str(out),
        backbone=bert,
        negatives=4,
        top_negatives=2,
        mine_depth=10,
        max_length=128,
        epochs=2,
        batch_size=8,
        learning_rate=1e-3,
        warmup_ratio=0.0,
        progress=False,
    )
    return RerankerTrainConfig(**{**base, **kw})


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def trained(work, bert, pools, tmp_path_factory):
    """Ten epochs at a high learning rate: the tiny model must come to separate its training pairs."""
    out = tmp_path_factory.mktemp("run") / "model"
    cfg = _cfg(work, bert, out, epochs=10, batch_size=32, learning_rate=3e-3)
    torch.set_num_threads(1)
    return cfg, train_reranker(cfg, pools=pools)


def test_the_best_epoch_is_a_cross_encoder_folder_that_loads_and_scores_anywhere(trained, pools):
    cfg, final = trained
    out = Path(cfg.output_dir)
    best = out / "best"
    assert {"config.json", "model.safetensors", "tokenizer.json", "metrics.json", "train_config.yaml"} <= {
        p.name for p in best.iterdir()
    }
    assert not list(best.glob("*.bin")) and not list(best.glob("*.pt"))
    evals = _log(out / "eval_log.jsonl")
    assert [e["epoch"] for e in evals] == list(range(1, 11))  # one validation per epoch
    assert all(isinstance(e["epoch"], int) for e in evals)
    chosen = max(evals, key=lambda e: e["score"])
    saved = json.loads((best / "metrics.json").read_text())
    assert saved["score"] == chosen["score"] == final["best_score"] and final["best_epoch"] == chosen["epoch"]
    assert load_config(RerankerTrainConfig, best / "train_config.yaml") == cfg

    # Loaded by sentence-transformers alone, it reranks the validation questions to the saved numbers.
    model = CrossEncoder(str(best))
    assert model.num_labels == 1
    validation = {p.name: validation_examples(p, cfg) for p in pools}
    again = RerankValidation(pools, validation, top_n=cfg.eval_top_n, k=cfg.eval_k).per_pool(model)
    for name, scores in again.items():
        assert scores["recall"] == pytest.approx(saved["pools"][name]["recall"])
        assert scores["all_gold"] == pytest.approx(saved["pools"][name]["all_gold"])
        assert scores["num_chunks"] == cfg.eval_k
    assert final["completed"] and final["global_step"] == final["session_steps"]
    assert set(final["direct"]) == {p.name for p in pools} and final["pairs"]["pairs"] > 0
    assert json.loads((out / "final_metrics.json").read_text()) == final


def test_the_labels_reach_the_loss(trained, pools):
    """The last epoch's model scores its training positives above its negatives (an inverted or
    dropped label would not)."""
    cfg, final = trained
    last = Path(cfg.output_dir) / "checkpoints" / f"checkpoint-{final['global_step']}"
    rows, _ = training_pairs(pools, cfg)
    scores = CrossEncoder(str(last)).predict(
        [(r["question"], r["text"]) for r in rows], show_progress_bar=False
    )
    labels = np.array([r["label"] for r in rows])
    pos, neg = scores[labels == 1], scores[labels == 0]
    auc = (pos[:, None] > neg[None, :]).mean()
    assert auc > 0.75, auc


@pytest.mark.numerics
@pytest.mark.parametrize("where", ["inside", "end"])  # a stop inside epoch 1, or on its last step
def test_a_resumed_run_continues_where_it_stopped_and_ends_as_an_uninterrupted_one(
    work, bert, pools, tmp_path, where
):
    whole = train_reranker(_cfg(work, bert, tmp_path / "whole"), pools=pools)
    per_epoch = math.ceil(whole["pairs"]["pairs"] / 8)
    steps = whole["global_step"]
    assert steps == 2 * per_epoch
    stop = 5 if where == "inside" else per_epoch

    out = tmp_path / "parts"
    first = train_reranker(_cfg(work, bert, out, stop_after_steps=stop), pools=pools)
    assert first == {"completed": False, "global_step": stop, "session_steps": stop, **_runtime(first)}
    assert not (out / "final_metrics.json").exists()
    # A stop inside an epoch does not validate; a stop at its end validates that epoch, once.
    evals = _log(out / "eval_log.jsonl") if (out / "eval_log.jsonl").exists() else []
    assert [e["epoch"] for e in evals] == ([] if where == "inside" else [1])

    rest = train_reranker(_cfg(work, bert, out), resume=True, pools=pools)
    assert rest["completed"] and rest["global_step"] == steps and rest["session_steps"] == steps - stop
    assert [e["epoch"] for e in _log(out / "eval_log.jsonl")] == [1, 2]
    assert rest["best_score"] == pytest.approx(whole["best_score"], abs=1e-6)
    a = load_file(str(tmp_path / "whole" / "best" / "model.safetensors"))
    b = load_file(str(out / "best" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)
    # A completed run resumed again returns its metrics and trains nothing.
    assert train_reranker(_cfg(work, bert, out), resume=True, pools=pools) == rest


def _runtime(metrics: dict) -> dict:
    return {"train_runtime_s": metrics["train_runtime_s"]}


def test_a_fresh_run_into_a_run_folder_and_a_changed_resume_are_refused(work, bert, pools, tmp_path):
    out = tmp_path / "run"
    train_reranker(_cfg(work, bert, out, epochs=1, stop_after_steps=2), pools=pools)
    with pytest.raises(ConfigError, match=r"already holds a training run .*--resume"):
        train_reranker(_cfg(work, bert, out, epochs=1), pools=pools)
    with pytest.raises(ConfigError, match=r"cannot resume .*negatives: 4 -> 3"):
        train_reranker(_cfg(work, bert, out, epochs=1, negatives=3), resume=True, pools=pools)
    with pytest.raises(ConfigError, match=r"needs pools=.*open_pools"):
        train_reranker(_cfg(work, bert, tmp_path / "other"))


def test_the_script_trains_from_a_config_and_overrides(work, bert, tmp_path, capsys):
    out = tmp_path / "script"
    overrides = [
        "train_sets=[{dataset: toy, toy: {num_questions: 40, seed: 1}}]",
        f"work_dir={tmp_path / 'work'}",
        f"output_dir={out}",
        f"backbone={bert}",
        "retriever.kind=bm25",
        "negatives=2",
        "top_negatives=2",
        "epochs=1",
        "max_length=64",
        "cpu_threads=1",
        "progress=false",
    ]
    assert script_main(overrides) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["completed"] and printed["best_epoch"] == 1 and set(printed["best"]) == {"0-toy"}
    assert CrossEncoder(str(out / "best")).predict([("who", "someone")]).shape == (1,)


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("negatives=-1", "negatives must be >= 0"),
        ("top_negatives=9", "top_negatives"),
        ("eval_k=30", "eval_k"),
        ("validation_ratio=1.5", "validation_ratio"),
        ("train_sets=[{dataset: hotpotqa, path: /no/such/train.json}]", "train_sets[0].path"),
        ("backbone=/no/such/folder", "'backbone'"),
        ("no_such_key=1", "no_such_key"),
    ],
)
def test_bad_input_fails_early_with_one_line_naming_the_field(tmp_path, capsys, override, named):
    work = tmp_path / "work"
    code = script_main(["train_sets=[{dataset: toy}]", f"work_dir={work}", "progress=false", override])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: ") and named in err[-1]
    assert not work.exists()  # nothing was prepared or indexed


def test_efficientrag_train_reranker_is_the_same_entry(capsys, monkeypatch, repo_root):
    monkeypatch.chdir(repo_root)
    with pytest.raises(SystemExit) as done:
        cli_main(["train", "reranker", "--help"])
    assert done.value.code == 0
    assert "usage: efficientrag train reranker" in capsys.readouterr().out
    assert cli_main(["train"]) == 2
    assert "{labeler,filter,reranker,exit-head}" in capsys.readouterr().out
    assert cli_main(["train", "reranker", "-c", "configs/reranker/minilm-cpu.yaml", "negatives=-1"]) == 2
    assert "negatives must be >= 0" in capsys.readouterr().err


def test_the_preset_trains_on_the_labelers_files_with_the_protocols_search(repo_root):
    cfg = load_config(RerankerTrainConfig, repo_root / "configs/reranker/minilm-cpu.yaml")
    treehop = load_config(RerankerTrainConfig, data={"train_sets": _yaml(repo_root, "treehop")["train_sets"]})
    assert cfg.train_sets == treehop.train_sets and len(cfg.train_sets) == 3
    assert cfg.retriever.kind == "bm25" and cfg.backbone == "sentence-transformers/all-MiniLM-L6-v2"
    assert (cfg.validation_ratio, cfg.split_seed) == (0.25, 1) and cfg.max_length == 256
    assert not cfg.trackers
    packaged = Path(__import__("efficientrag").__file__).parent / "configs/reranker/minilm-cpu.yaml"
    assert packaged.read_text() == (repo_root / "configs/reranker/minilm-cpu.yaml").read_text()


def _yaml(repo_root: Path, name: str) -> dict:
    import yaml

    return yaml.safe_load((repo_root / f"configs/{name}/minilm-cpu.yaml").read_text())
