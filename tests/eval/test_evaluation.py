"""``efficientrag.eval.evaluate(cfg)`` is ``efficientrag eval`` from Python: the same folder, the same
fingerprint (each resumes the other's run), a typed summary that reads like summary.json; a method
built by the caller enters at ``evaluate_method`` with the same result; and a run folder is bound
in exactly one place of the code."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from efficientrag.cli import main
from efficientrag.config import load_config
from efficientrag.errors import ConfigError
from efficientrag.eval import RunSummary, evaluate, evaluate_method
from efficientrag.experiment.assembly import build_method, search_backend
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import prepare_data
from efficientrag.experiment.run_binding import StaleRunError, bind_run, examples_digest, read_fingerprint

REPO = Path(__file__).resolve().parents[2]
# Toy world + BM25: no encoder to load, about a second per run.
TOY = ["data.dataset=toy", "data.toy.num_questions=12", "retriever.kind=bm25", "eval.limit=4"]


def toy_config(work: Path, *overrides: str) -> ExperimentConfig:
    return load_config(ExperimentConfig, None, [*TOY, f"work_dir={work}", *overrides])


def test_evaluate_from_python_is_the_cli_run(tmp_path, capsys):
    summary = evaluate(toy_config(tmp_path, "eval.method=direct_r"), progress=False)
    run = tmp_path / "eval" / "direct_r"
    assert isinstance(summary, RunSummary) and isinstance(summary, Mapping)
    assert summary.run_dir == run and summary.method == "direct_r" and summary.n == 4
    assert summary.num_failed == 0 and summary.errors_file is None
    # Reads as the summary.json it wrote, and the table is the folder's table.md.
    assert dict(summary) == json.loads((run / "summary.json").read_text())
    assert summary["retrieval"]["10"]["recall"] == summary.metrics["retrieval"]["10"]["recall"]
    assert summary.table == (run / "table.md").read_text() and "direct_r" in summary.table
    assert read_fingerprint(run)["method"] == "direct_r" and (run / "config.yaml").is_file()
    predictions = summary.predictions_file.read_text()

    # The command line makes the same fingerprint: it resumes the Python run, redoing nothing.
    cli = ["eval", "--work-dir", str(tmp_path), "--method", "direct_r", *TOY]
    assert main(cli) == 0
    assert "4 questions; per-question records in" in capsys.readouterr().out
    assert (run / "predictions.jsonl").read_text() == predictions

    # Other inputs are refused before the folder's config is touched; resume=False starts over.
    config_before = (run / "config.yaml").read_text()
    with pytest.raises(StaleRunError, match=r"differing: eval\.ks"):
        evaluate(toy_config(tmp_path, "eval.method=direct_r", "eval.ks=[1,3]"), progress=False)
    assert (run / "config.yaml").read_text() == config_before
    again = evaluate(
        toy_config(tmp_path, "eval.method=direct_r", "eval.ks=[1,3]"), resume=False, progress=False
    )
    assert set(again["retrieval"]) == {"1", "3"}


def test_a_method_built_by_the_caller_gets_the_same_run(tmp_path):
    cfg = toy_config(tmp_path, "eval.method=direct_r", "eval.answer=false")
    pooled = prepare_data(cfg)
    retriever = search_backend(cfg, pooled.corpus)
    method = build_method("direct_r", cfg, retriever, None)
    built = evaluate_method(cfg, method, retriever, pooled, meta={"qa_source": "none"}, progress=False)
    assert built.run_dir == tmp_path / "eval" / "direct_r" and built.n == 4
    assert built["qa_source"] == "none" and built["retriever"] == "bm25" and built["dataset"] == "toy"
    predictions = built.predictions_file.read_text()
    # evaluate(cfg) finds the folder bound to the same inputs and resumes it.
    assert evaluate(cfg, progress=False).n == 4
    assert built.predictions_file.read_text() == predictions


def test_no_questions_left_fails_before_any_index_is_built(tmp_path):
    with pytest.raises(ValueError, match="no questions to evaluate in toy after eval.limit"):
        evaluate(toy_config(tmp_path, "eval.method=direct_r", "eval.limit=0"), progress=False)
    assert not (tmp_path / "index").exists()


def bind_run_calls(root: Path) -> list[str]:
    calls = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name == "bind_run":
                    calls.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return calls


def test_a_run_folder_is_bound_in_one_place():
    calls = [*bind_run_calls(REPO / "efficientrag"), *bind_run_calls(REPO / "benchmarks")]
    assert len(calls) == 1 and calls[0].startswith("efficientrag/eval/runner.py:"), calls


@pytest.mark.parametrize(
    ("override", "section"),
    [
        ("eval.limit=-1", "eval"),
        ("data.limit=-3", "data"),
        ("data.extra=[{dataset: toy, limit: -2}]", "data"),
    ],
)
def test_a_negative_limit_is_refused_not_read_as_a_slice(override, section):
    with pytest.raises(ConfigError, match=rf": {section}\S*\.limit must be >= 0, got -\d+$"):
        load_config(ExperimentConfig, None, [override])


def test_eval_limit_minus_five_on_the_command_line_is_one_line(capsys):
    assert main(["eval", "--method", "direct_r", "--limit", "-5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "limit must be >= 0" in err and "got -5" in err


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("answer", [False, True], ids=["direct_r", "direct_r_qa"])
def test_a_run_refused_for_other_questions_leaves_the_work_folder_byte_for_byte(tmp_path, answer):
    """Another question file (here: more toy questions, so another corpus too) into a folder that
    holds a run: refused naming the data, before the pooled data is rewritten or an index rebuilt.
    The answering run's folder (``direct_r_qa``) is bound by hand: it would need an LLM to fill."""
    flags = ["eval.method=direct_r", f"eval.answer={str(answer).lower()}"]
    first = toy_config(tmp_path, *flags)
    if answer:
        run = tmp_path / "eval" / "direct_r_qa"
        bind_run(run, {"data": examples_digest(prepare_data(first).examples)})
        (run / "predictions.jsonl").write_text('{"id": "x"}\n')
    else:
        evaluate(first, progress=False)
    before = tree_bytes(tmp_path)
    with pytest.raises(StaleRunError, match=r"differing: data"):
        evaluate(toy_config(tmp_path, *flags, "data.toy.num_questions=14"), progress=False)
    assert tree_bytes(tmp_path) == before
