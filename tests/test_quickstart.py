"""The quickstart in a reduced form: a small toy world, a few training steps, BM25 retrieval.

Quality is not the point here (the models see a few batches); the flow is: held-out questions are
never used for synthesis, every step writes its output, the table compares the two methods on the
same questions, and a second run reuses everything instead of redoing it.
"""

import json

import pytest

from efficientrag.cli import main
from efficientrag.config import load_config
from efficientrag.errors import ConfigError
from efficientrag.quickstart.job import QuickstartConfig, run_quickstart, split_examples

pytestmark = pytest.mark.usefixtures("minilm_path")

SMALL = [
    "data.toy.num_questions=40",
    "retriever.kind=bm25",
    "labeler.max_steps=3",
    "labeler.batch_size=8",
    "filter.max_steps=2",
    "filter.batch_size=8",
    "progress=false",
]


def small_config(work_dir, *extra):
    return load_config(QuickstartConfig, None, [f"work_dir={work_dir}", *SMALL, *extra])


def read_ids(path):
    return set(path.read_text(encoding="utf-8").split())


def test_quickstart_trains_on_one_part_and_evaluates_on_the_rest(tmp_path):
    summary = run_quickstart(small_config(tmp_path))

    train_ids = read_ids(tmp_path / "split" / "train_ids.txt")
    eval_ids = read_ids(tmp_path / "split" / "eval_ids.txt")
    assert train_ids and eval_ids and not train_ids & eval_ids
    assert len(train_ids) + len(eval_ids) == 40

    # Synthesis only saw training questions.
    synth_qids = {
        json.loads(line)["question_id"]
        for part in ("train", "validation")
        for line in (tmp_path / "synth" / "labeler" / f"{part}.jsonl").read_text().splitlines()
    }
    assert synth_qids and synth_qids <= train_ids
    # The synthesized validation split is not empty (its split must not coincide with the held-out one).
    assert (tmp_path / "synth" / "labeler" / "validation.jsonl").stat().st_size > 0

    for model in ("labeler", "filter"):
        assert (tmp_path / "models" / model / "best" / "model.safetensors").is_file()
    # Both methods scored the same held-out questions.
    for method in ("direct_r", "efficientrag"):
        records = (tmp_path / "eval" / method / "predictions.jsonl").read_text().splitlines()
        assert {json.loads(r)["id"] for r in records} == eval_ids

    table = summary["table"].splitlines()
    assert [row.split("|")[1].strip() for row in table[2:]] == [
        "Direct-R@2",
        "Direct-R@4",
        "Direct-R@6",
        "Direct-R@10",
        "Direct-R@20",
        "EfficientRAG",
    ]
    assert all(f"| {len(eval_ids)} |" in row for row in table[2:])
    assert (tmp_path / "recall_vs_chunks.png").stat().st_size > 0
    assert "EfficientRAG" in (tmp_path / "quickstart.md").read_text()
    saved = json.loads((tmp_path / "quickstart.json").read_text())
    assert saved["questions"] == {"all": 40, "train_pool": len(train_ids), "held_out": len(eval_ids)}
    assert saved["labeler"]["train_rows"] > 0 and saved["filter"]["train_rows"] > 0


def test_a_second_run_reuses_every_step(tmp_path):
    run_quickstart(small_config(tmp_path))
    weights = tmp_path / "models" / "labeler" / "best" / "model.safetensors"
    predictions = tmp_path / "eval" / "efficientrag" / "predictions.jsonl"
    before = (weights.stat().st_mtime_ns, predictions.read_text())

    again = run_quickstart(small_config(tmp_path))

    assert (weights.stat().st_mtime_ns, predictions.read_text()) == before
    assert again["efficientrag"]["n"] == len(read_ids(tmp_path / "split" / "eval_ids.txt"))


@pytest.mark.numerics
def test_loaded_models_bind_the_results_to_their_own_folders(tmp_path):
    """The benchmarks hand in models loaded once (behind a prediction cache) and a config with no
    model paths: the run must still be bound to those models' weights, and equal the path run."""
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.experiment.run_binding import read_fingerprint
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.prediction_cache import CachedPredictor
    from efficientrag.quickstart.job import evaluate_efficientrag
    from efficientrag.retrieval.factory import build_retriever

    cfg = small_config(tmp_path)
    run_quickstart(cfg)
    exp = ExperimentConfig(work_dir=cfg.work_dir, data=cfg.data, retriever=cfg.retriever)
    pooled = prepare_data(exp)
    retriever = build_retriever(cfg.retriever, pooled.corpus, exp.index_dir, show_progress=False)
    held_out = [ex for ex in pooled.examples if ex.id in read_ids(tmp_path / "split" / "eval_ids.txt")]
    lab, fil = (
        cls.from_pretrained(tmp_path / "models" / m / "best")
        for cls, m in ((Labeler, "labeler"), (Filter, "filter"))
    )
    rag = EfficientRAG(retriever, CachedPredictor(lab), CachedPredictor(fil))

    evaluate_efficientrag(cfg, cfg.efficientrag, retriever, held_out, tmp_path / "loaded", rag=rag)

    by_paths = read_fingerprint(tmp_path / "eval" / "efficientrag")
    loaded = read_fingerprint(tmp_path / "loaded")
    assert (
        loaded["models"] == by_paths["models"] and loaded["models"]["labeler"] != loaded["models"]["filter"]
    )
    assert loaded["settings"] == by_paths["settings"]
    chunks = [
        [json.loads(r)["id"], json.loads(r)["retrieved_ids"]]
        for r in (tmp_path / "eval" / "efficientrag" / "predictions.jsonl").read_text().splitlines()
    ]
    again = [
        [json.loads(r)["id"], json.loads(r)["retrieved_ids"]]
        for r in (tmp_path / "loaded" / "predictions.jsonl").read_text().splitlines()
    ]
    assert sorted(again) == sorted(chunks)
    lab.source = None
    with pytest.raises(ValueError, match="not loaded from a folder"):
        evaluate_efficientrag(cfg, cfg.efficientrag, retriever, held_out, tmp_path / "x", rag=rag)


def test_cli_quickstart_prints_the_table(tmp_path, capsys):
    assert main(["quickstart", "--work-dir", str(tmp_path), *SMALL]) == 0
    out = capsys.readouterr().out
    assert "| Direct-R@10 | toy |" in out and "| EfficientRAG | toy |" in out
    assert str(tmp_path / "recall_vs_chunks.png") in out


def test_cli_quickstart_needs_a_file_for_a_real_dataset(tmp_path, capsys):
    assert main(["quickstart", "--dataset", "hotpotqa", "--work-dir", str(tmp_path)]) == 2
    assert "--data" in capsys.readouterr().err


def test_split_is_by_question_id_and_refuses_an_empty_side():
    from efficientrag.data.schema import Example

    examples = [Example(f"q{i}", f"question {i}?", ["a"], ["c"]) for i in range(200)]
    train, held_out = split_examples(examples, eval_ratio=0.25)
    assert 30 < len(held_out) < 70 and len(train) + len(held_out) == 200
    # Adding questions never moves one that was already placed.
    train2, held_out2 = split_examples([*examples, Example("new", "new?", ["a"], ["c"])], eval_ratio=0.25)
    assert {e.id for e in held_out} <= {e.id for e in held_out2}
    with pytest.raises(ValueError, match="one side empty"):
        split_examples(examples[:3], eval_ratio=0.01)


@pytest.mark.parametrize("preset", ["toy", "hotpotqa", "2wikimultihopqa"])
def test_presets_load(preset, repo_root):
    cfg = load_config(QuickstartConfig, repo_root / "configs" / "quickstart" / f"{preset}.yaml")
    assert cfg.labeler.model == "labeler" and cfg.filter.model == "filter"
    assert cfg.labeler.pooling == "pair" and cfg.synth.negatives_per_query == 4
    assert cfg.data.dataset == preset


def test_the_toy_preset_is_the_embedded_default(repo_root):
    from efficientrag.config_values import to_dict

    preset = load_config(QuickstartConfig, repo_root / "configs" / "quickstart" / "toy.yaml")
    assert to_dict(preset) == to_dict(QuickstartConfig())


# The recipes quickstart.py embedded in Python before they came from configs/quickstart/toy.yaml
# (issue 27): the defaults must not have moved.
EMBEDDED_LABELER = dict(
    model="labeler",
    pooling="pair",
    class_weights="auto",
    learning_rate=1e-4,
    epochs=2,
    batch_size=16,
    eval_batch_size=32,
    max_length=256,
    warmup_steps=30,
    mixed_precision="no",
    eval_steps=0,
    save_steps=100,
    logging_steps=10,
    max_eval_rows=500,
)
EMBEDDED_FILTER = dict(
    model="filter",
    learning_rate=1e-4,
    epochs=10,
    batch_size=32,
    eval_batch_size=64,
    max_length=128,
    warmup_steps=20,
    mixed_precision="no",
    eval_steps=0,
    save_steps=100,
    logging_steps=10,
    max_eval_rows=500,
)
EMBEDDED_SYNTH = dict(
    teacher="annotations",
    validation_ratio=0.1,
    negatives_top_k=10,
    negatives_per_query=4,
    question_positives=True,
    min_align_rate=0.8,
)


def test_the_model_recipes_from_the_presets_are_the_ones_once_embedded():
    from efficientrag.config_values import to_dict
    from efficientrag.training.config import TrainConfig

    cfg = QuickstartConfig()
    for got, embedded in ((cfg.labeler, EMBEDDED_LABELER), (cfg.filter, EMBEDDED_FILTER)):
        # output_dir is the quickstart's own (work_dir/models/<kind>), whatever the preset says.
        got, was = to_dict(got), to_dict(TrainConfig(**embedded))
        got.pop("output_dir"), was.pop("output_dir")
        assert got == was
    assert {key: getattr(cfg.synth, key) for key in EMBEDDED_SYNTH} == EMBEDDED_SYNTH


def test_synthesis_runs_on_the_quickstart_data_retriever_and_folder(tmp_path, monkeypatch):
    from efficientrag.quickstart.job import QuickstartPaths, synthesize
    from efficientrag.synth import pipeline

    seen = []
    monkeypatch.setattr(pipeline, "run_synthesis", lambda scfg, **kw: seen.append(scfg) or {})
    cfg = small_config(tmp_path, "synth.negatives_per_query=2", "synth.max_errors=3", "split_seed=4")
    synthesize(cfg, QuickstartPaths(tmp_path), None, [], None)
    (scfg,) = seen
    assert (scfg.data, scfg.retriever, scfg.out_dir) == (cfg.data, cfg.retriever, str(tmp_path / "synth"))
    assert (scfg.seed, scfg.progress, scfg.negatives_per_query, scfg.max_errors) == (5, False, 2, 3)
    with pytest.raises(ConfigError, match="synth.out_dir is set by the quickstart from 'work_dir'"):
        small_config(tmp_path, "synth.out_dir=elsewhere")


def test_without_the_presets_the_defaults_fail_naming_the_file(monkeypatch, tmp_path):
    from efficientrag.quickstart import presets

    monkeypatch.setattr(presets, "CANDIDATES", (tmp_path / "nowhere",))
    with pytest.raises(ConfigError, match=r"preset configs/quickstart/toy.yaml not found.*pip install -e"):
        QuickstartConfig()


def test_train_sets_train_on_other_files_and_evaluate_every_question(tmp_path):
    from dataclasses import replace

    from efficientrag.data.config import DataConfig, ToyWorldConfig

    sets = [DataConfig(toy=ToyWorldConfig(seed=s, num_questions=24)) for s in (2, 3)]
    cfg = replace(small_config(tmp_path, "data.toy.seed=1", "data.toy.num_questions=20"), train_sets=sets)
    summary = run_quickstart(cfg)

    eval_ids = read_ids(tmp_path / "split" / "eval_ids.txt")
    train_ids = read_ids(tmp_path / "split" / "train_ids.txt")
    assert len(eval_ids) == 20 and len(train_ids) == 48 and not eval_ids & train_ids
    # Each file synthesized over its own corpus, then merged: rows of both, none of the evaluated.
    for i in range(2):
        assert (tmp_path / "train" / f"{i}-toy" / "synth" / "labeler" / "train.jsonl").is_file()
    merged = {
        json.loads(line)["question_id"]
        for part in ("train", "validation")
        for line in (tmp_path / "synth" / "labeler" / f"{part}.jsonl").read_text().splitlines()
    }
    assert merged <= train_ids and not merged & eval_ids
    assert {q.split("__toy")[1].split("_")[0] for q in merged} == {"2", "3"}
    for method in ("direct_r", "efficientrag"):
        records = (tmp_path / "eval" / method / "predictions.jsonl").read_text().splitlines()
        assert {json.loads(r)["id"] for r in records} == eval_ids
    assert summary["trained_on"] == ["toy", "toy"]
    assert summary["questions"] == {"all": 20, "train_pool": 48, "held_out": 20}
    assert "of other files" in (tmp_path / "quickstart.md").read_text()


def test_train_sets_may_not_hold_an_evaluated_question(tmp_path):
    from dataclasses import replace

    from efficientrag.data.config import DataConfig, ToyWorldConfig
    from efficientrag.errors import ConfigError

    cfg = small_config(tmp_path, "data.toy.seed=1", "data.toy.num_questions=20")
    cfg = replace(cfg, train_sets=[DataConfig(toy=ToyWorldConfig(seed=1, num_questions=30))])
    with pytest.raises(ConfigError, match=r"train_sets\[0\].*also evaluated"):
        run_quickstart(cfg)
