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


def test_judge_rows_keep_the_raw_reply_beside_em(bench):
    from efficientrag.eval.judge import JudgeVerdict

    items = [
        ("direct_r", {"id": "q1", "qa": {"em": 1.0, "contained": 1.0}}),
        ("flare", {"id": "q2", "qa": {"em": 0.0, "contained": 1.0}}),
    ]
    verdicts = [
        JudgeVerdict(True, raw='{"correct": true}'),
        JudgeVerdict(None, raw="Paris is", error="no verdict"),
    ]
    rows = bench.judge_rows(items, verdicts)
    assert [r["reply"] for r in rows] == ['{"correct": true}', "Paris is"]
    assert rows[1] == {
        "method": "flare",
        "id": "q2",
        "em": 0.0,
        "contained": 1.0,
        "judge": None,
        "reply": "Paris is",
        "error": "no verdict",
    }


def test_given_decompositions_start_from_the_annotation_teachers_finished_stage(bench, tmp_path):
    src, dst = tmp_path / "annotations", tmp_path / "llm-given-decompositions"
    with pytest.raises(SystemExit, match="decompose stage has not finished"):
        bench.copy_decompositions(src, dst)
    src.mkdir()
    for name, text in (
        ("decomposed.jsonl", '{"id": "q"}\n'),
        ("decompose.meta.json", "{}"),
        ("decompose.done.json", "{}"),
    ):
        (src / name).write_text(text, encoding="utf-8")
    dst.mkdir()
    (dst / "decomposed.jsonl").write_text('{"id": "kept from an earlier run"}\n', encoding="utf-8")
    bench.copy_decompositions(src, dst)
    # An earlier run's file is never overwritten (the run resumes on it); missing ones are copied.
    assert "earlier run" in (dst / "decomposed.jsonl").read_text(encoding="utf-8")
    assert (dst / "decompose.done.json").is_file() and (dst / "decompose.meta.json").is_file()
    assert not (dst / "decompose.rejects.jsonl").exists()
