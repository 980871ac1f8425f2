"""The real-LLM benchmark counts retrieval decisions from both active methods' step logs."""

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("real_llm_bench", REPO / "benchmarks" / "real_llm.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def rec(*steps):
    return {"trace": {"steps": list(steps)}}


def test_dragin_and_flare_decisions_are_both_counted(bench):
    records = [
        rec({"kind": "generate", "triggered": True}, {"kind": "generate", "triggered": False}),
        rec({"kind": "initial_retrieval"}, {"kind": "lookahead", "retrieved": False}),
        rec({"kind": "lookahead", "retrieved": True}, {"kind": "answer_retry", "text": "x"}),
    ]
    steps, questions = bench.trigger_stats(records)
    assert steps == pytest.approx(2 / 4)
    assert questions == pytest.approx(2 / 3)


def test_methods_without_decisions_report_none(bench):
    assert bench.trigger_stats([rec({"kind": "initial_retrieval"}), {"trace": None}]) == (None, None)


def test_answered_retrieval_methods_are_found_under_their_qa_folder(bench, tmp_path):
    (tmp_path / "eval" / "efficientrag_qa").mkdir(parents=True)
    (tmp_path / "eval" / "efficientrag_qa" / "predictions.jsonl").write_text("{}\n")
    assert bench.method_dir(tmp_path, "efficientrag").name == "efficientrag_qa"
    assert bench.method_dir(tmp_path, "flare").name == "flare"
