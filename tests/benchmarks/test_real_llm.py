"""The real-LLM benchmark finds each method's folder and keeps the judge's raw replies."""

BENCHMARK = "real_llm"  # imported by the ``bench`` fixture (tests/conftest.py)


def test_answered_retrieval_methods_are_found_under_their_qa_folder(bench, tmp_path):
    (tmp_path / "eval" / "efficientrag_qa").mkdir(parents=True)
    (tmp_path / "eval" / "efficientrag_qa" / "predictions.jsonl").write_text("{}\n")
    assert bench.method_dir(tmp_path, "efficientrag").name == "efficientrag_qa"
    assert bench.method_dir(tmp_path, "flare").name == "flare"


def test_judge_rows_keep_the_raw_reply_beside_em(bench):
    from efficientrag.baselines.judge import JudgeVerdict

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
