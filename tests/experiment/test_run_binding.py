"""A run folder is bound to its inputs: a rerun with other settings, models, retriever, generator or
data is refused with the differing keys named (and the folder's config.yaml left alone); the same
inputs resume; ``--no-resume`` and a new ``eval.name`` are the two ways out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from efficientrag.cli import main
from efficientrag.config import flatten
from efficientrag.experiment.run_binding import StaleRunError, bind_run, differing_keys, read_fingerprint
from efficientrag.testing.fake_openai import FakeOpenAIServer

# Toy world + BM25: no encoder to load, about a second per run.
TOY = ["--dataset", "toy", "--limit", "4", "data.toy.num_questions=12", "retriever.kind=bm25"]


def eval_cli(work: Path, *args: str) -> int:
    return main(["eval", *TOY, "--work-dir", str(work), *args])


def refusal(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err, "expected an error line"
    return err[-1]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, str]:
    """Two Labelers that differ only in their random heads, and one Filter (tiny ModernBERT)."""
    import torch

    from efficientrag.models import Filter, Labeler
    from efficientrag.testing.tiny_backbones import tiny_modernbert
    from efficientrag.testing.token_tasks import sentences

    root = tmp_path_factory.mktemp("tiny-models")
    backbone = str(tiny_modernbert(root / "mb", sentences(200)))
    out = {}
    for name, seed in (("labeler_a", 0), ("labeler_b", 1)):
        torch.manual_seed(seed)
        out[name] = str(Labeler.from_backbone(backbone, device="cpu").save_pretrained(root / name))
    out["filter"] = str(Filter.from_backbone(backbone, device="cpu").save_pretrained(root / "filter"))
    return out


def test_same_inputs_resume_and_changed_inputs_are_refused_by_name(tmp_path, capsys):
    assert eval_cli(tmp_path, "--method", "direct_r") == 0
    run = tmp_path / "eval" / "direct_r"
    config_before = (run / "config.yaml").read_text()
    predictions_before = (run / "predictions.jsonl").read_text()
    assert read_fingerprint(run)["method"] == "direct_r"

    assert eval_cli(tmp_path, "--method", "direct_r") == 0  # same inputs: resumes, nothing redone
    assert (run / "predictions.jsonl").read_text() == predictions_before
    capsys.readouterr()

    cases = {
        "eval.ks": ["eval.ks=[1,3]"],
        # Other questions, and so another corpus (its index is built fresh; the old one would refuse it).
        "data": ["data.toy.num_questions=13", f"retriever.index_dir={tmp_path / 'idx-13'}"],
        "retriever.bm25_k1": ["retriever.bm25_k1=2.0", f"retriever.index_dir={tmp_path / 'idx-k2'}"],
        "index": ["retriever.bm25_k1=2.0", f"retriever.index_dir={tmp_path / 'idx-k2'}"],
    }
    for key, overrides in cases.items():
        assert eval_cli(tmp_path, "--method", "direct_r", *overrides) == 2, key
        line = refusal(capsys)
        assert key in line and str(run) in line, (key, line)
        assert "eval.name" in line and "--no-resume" in line
        # The folder still describes what it computed.
        assert (run / "config.yaml").read_text() == config_before
        assert (run / "predictions.jsonl").read_text() == predictions_before

    # Way out 1: a new folder beside the old one.
    assert eval_cli(tmp_path, "--method", "direct_r", "eval.ks=[1,3]", "eval.name=k13") == 0
    assert (tmp_path / "eval" / "k13" / "predictions.jsonl").is_file()
    # Way out 2: start this one over.
    assert eval_cli(tmp_path, "--method", "direct_r", "eval.ks=[1,3]", "--no-resume") == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["eval"]["ks"] == [1, 3]
    record = json.loads((run / "predictions.jsonl").read_text().splitlines()[0])
    assert set(record["retrieval"]) == {"1", "3"}


def test_efficientrag_settings_and_model_folders_are_part_of_the_fingerprint(tmp_path, tiny_models, capsys):
    models = ["--method", "efficientrag", "--filter", tiny_models["filter"], "efficientrag.max_hops=1"]
    assert eval_cli(tmp_path, *models, "--labeler", tiny_models["labeler_a"]) == 0
    capsys.readouterr()
    for key, args in {
        "settings.efficientrag.top_k": ["--labeler", tiny_models["labeler_a"], "efficientrag.top_k=3"],
        "models.labeler": ["--labeler", tiny_models["labeler_b"]],
    }.items():
        assert eval_cli(tmp_path, *models, *args) == 2
        assert key in refusal(capsys)
    # A speed setting changes nothing that is computed: the run resumes.
    assert (
        eval_cli(tmp_path, *models, "--labeler", tiny_models["labeler_a"], "efficientrag.batch_size=2") == 0
    )


def test_the_generator_is_part_of_the_fingerprint(tmp_path, capsys):
    with FakeOpenAIServer(lambda r: '{"answer": "x"}') as srv:
        gen = ["generator.backend=openai", f"generator.openai.llm.base_url={srv.base_url}"]
        assert eval_cli(tmp_path, "--method", "direct", *gen, "generator.openai.llm.model=m1") == 0
        capsys.readouterr()
        assert eval_cli(tmp_path, "--method", "direct", *gen, "generator.openai.llm.model=m2") == 2
        assert "settings.generator.openai.llm.model" in refusal(capsys)
        # Concurrency only changes speed.
        args = [*gen, "generator.openai.llm.model=m1", "generator.openai.llm.concurrency=2"]
        assert eval_cli(tmp_path, "--method", "direct", *args) == 0


def test_an_edited_question_file_is_other_data(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "title": f"T{i}", "text": f"fact number {i}"}) + "\n" for i in range(5)
        )
    )
    questions = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{i}", "question": f"what is fact {i}?", "answers": [str(i)], "gold_ids": [f"c{i}"]}
            for i in range(3)]  # fmt: skip
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["eval", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus),
            "--work-dir", str(tmp_path / "w"), "--method", "direct_r", "retriever.kind=bm25"]  # fmt: skip
    assert main(args) == 0
    rows[1]["answers"] = ["another answer"]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(args) == 2
    assert "(differing: data)" in refusal(capsys)


def test_a_folder_from_before_fingerprints_is_not_trusted(tmp_path):
    (tmp_path / "predictions.jsonl").write_text('{"id": "q1"}\n')
    with pytest.raises(StaleRunError, match="no recorded inputs"):
        bind_run(tmp_path, {"method": "m"})
    assert bind_run(tmp_path, {"method": "m"}, resume=False) is False
    assert not (tmp_path / "predictions.jsonl").exists()


def test_differing_keys_are_the_flattened_leaves():
    old = {"settings": {"efficientrag": {"top_k": 10, "max_hops": 4}}, "models": {"labeler": "a"}}
    new = {
        "settings": {"efficientrag": {"top_k": 3, "max_hops": 4}},
        "models": {"labeler": "a", "filter": "f"},
    }
    assert differing_keys(old, new) == ["models.filter", "settings.efficientrag.top_k"]
    assert flatten({"a": {}, "b": {"c": [1]}}) == {"a": {}, "b.c": [1]}


def test_the_report_reads_each_runs_recorded_inputs(tmp_path, capsys):
    from efficientrag.eval.report import write_report
    from efficientrag.experiment.run_binding import fingerprint_id

    assert eval_cli(tmp_path / "a", "--method", "direct_r") == 0
    assert eval_cli(tmp_path / "b", "--method", "direct_r", "data.toy.seed=7") == 0  # other questions
    runs = [tmp_path / "a" / "eval" / "direct_r", tmp_path / "b" / "eval" / "direct_r"]
    text = write_report(runs, tmp_path / "report", title="t").read_text()
    for run in runs:
        assert f"inputs `{fingerprint_id(read_fingerprint(run))}`" in text
    assert "**Not one comparison.**" in text and "2 different question sets" in text

    same = write_report([runs[0], runs[0]], tmp_path / "report2", title="t").read_text()
    assert "Not one comparison" not in same

    # A summary left from other inputs than run.json records is refused, not reported.
    summary = json.loads((runs[0] / "summary.json").read_text())
    summary["fingerprint_id"] = "0" * 16
    (runs[0] / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="summary.json was written under other inputs"):
        write_report([runs[0]], tmp_path / "report3", title="t")


def test_the_quickstart_evaluates_again_when_its_inputs_change(tmp_path):
    from dataclasses import replace

    from efficientrag.data.pooling import pool
    from efficientrag.data.readers.toy import read_toy_world
    from efficientrag.quickstart.job import QuickstartConfig, evaluate_direct
    from efficientrag.testing.word_overlap import WordOverlapRetriever

    world = pool([read_toy_world(num_questions=6, seed=0)])
    retriever = WordOverlapRetriever(world.corpus)
    cfg = replace(QuickstartConfig(), ks=[1, 2], progress=False)
    first = evaluate_direct(cfg, retriever, world.examples, tmp_path)
    assert set(first["retrieval"]) == {"1", "2"}
    again = evaluate_direct(replace(cfg, ks=[3]), retriever, world.examples, tmp_path)
    assert set(again["retrieval"]) == {"3"} and again["n"] == 6
